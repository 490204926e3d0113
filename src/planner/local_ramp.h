// The local ramp: each batch size runs in a fresh child (`plimsoll plan
// --ramp-child-batch K`), inside a memory cgroup with the limit where possible.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "planner/ramp.h"
#include "planner/static_plan.h"

namespace plimsoll::planner {

struct LocalRampOptions {
  std::string self_exe = "/proc/self/exe";
  std::vector<std::string> child_args;  // the plan flags; --ramp-child-batch K is appended
  bool use_cgroup = true;
  double stop_fraction = 0.85;
};

// Steps 1, 2, 4, ... up to the plan's concurrent sequences; stops at the rules of
// stop_reason(). Predictions use the plan and its measured runtime base.
Result<RampResult> run_local_ramp(const StaticPlan& plan, const LocalRampOptions& options,
                                  const ProgressFn& progress);

}  // namespace plimsoll::planner
