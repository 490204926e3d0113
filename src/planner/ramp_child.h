// One ramp step in a child process: the real engine set up as `serve` would
// (same plan), K synthetic sequences of P + N tokens prefilled and decoded.
#pragma once

#include <cstdint>
#include <string>

#include "planner/static_plan.h"
#include "server/engine_setup.h"

namespace plimsoll::planner {


// What the child prints on stdout, one JSON line, and the parent reads back.
struct ChildReport {
  int64_t batch = 0;
  bool fits = true;                 // false: the KV pool cannot hold K sequences
  int64_t runtime_base_bytes = 0;   // VmRSS after loading, before planning
  int64_t peak_resident_bytes = 0;  // VmHWM at the end
  int64_t kv_blocks_used = 0;       // blocks the K sequences held
  double seconds = 0;
  std::string error;
};
std::string child_report_json(const ChildReport& report);
ChildReport parse_child_report(const std::string& line);

// Runs the step and prints the report; the exit code is 0 when it ran.
int run_ramp_child(const ServeConfig& settings, int64_t batch, int64_t prompt_tokens, int64_t new_tokens);

}  // namespace plimsoll::planner
