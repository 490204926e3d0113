// The empirical ramp's data and rules: growing batches, what was predicted and
// measured at each, when to stop (85 % of the limit, a plateau), the ceiling.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace plimsoll::planner {

struct RampStep {
  int64_t batch = 0;                // sequences (local) or concurrent requests (server)
  int64_t kv_blocks = 0;            // blocks the model expects written at the peak
  int64_t predicted_bytes = 0;      // the memory model's resident bytes (predict_resident)
  int64_t measured_rss_bytes = 0;   // VmHWM (local) or peak plimsoll_memory_resident_bytes (server)
  int64_t cgroup_peak_bytes = 0;    // the cgroup's own high-water mark; 0 when none
  double seconds = 0;
  std::string outcome = "ok";       // ok | does not fit | killed | error: ...

  bool ok() const { return outcome == "ok"; }
  // The larger of the two measurements: what the limit is compared with.
  int64_t measured_bytes() const { return measured_rss_bytes > cgroup_peak_bytes ? measured_rss_bytes : cgroup_peak_bytes; }
  // (measured - predicted) / predicted, from the RSS figure the model predicts.
  double error_ratio() const;
};

struct RampResult {
  std::string mode;              // "cgroup v1 (...)", "plain child process (...)", "server http://..."
  int64_t limit_bytes = 0;
  double stop_fraction = 0.85;
  std::vector<RampStep> steps;
  std::string stopped_because;
  int64_t ceiling_batch = 0;     // largest ok batch measured under stop_fraction x limit
  int64_t ceiling_bytes = 0;     // its measured bytes
};

// 1, 2, 4, ... below `last`, then `last` itself.
std::vector<int64_t> ramp_batches(int64_t last);
// Why to stop after the latest step, or "" to go on: a failed step, 85 % of the
// limit reached, or a plateau (KV blocks and measured bytes stopped growing).
std::string stop_reason(const RampResult& ramp);
// Fills ceiling_batch / ceiling_bytes from the steps.
void set_ceiling(RampResult& ramp);

// Progress on stderr: "[#####.....] step 3/8: batch 4".
using ProgressFn = std::function<void(int64_t done, int64_t total, const std::string& what)>;
ProgressFn stderr_progress_bar();

}  // namespace plimsoll::planner
