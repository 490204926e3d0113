// The ramp against a running server: /info and /metrics for the plan, then
// growing concurrent /generate load, plimsoll_memory_resident_bytes per step.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/result.h"
#include "planner/ramp.h"

namespace plimsoll::planner {

struct ServerRampOptions {
  std::string url;                 // http://host:port
  int64_t prompt_tokens = 16;      // P (approximately: a synthetic text measured with /tokenize)
  int64_t max_new_tokens = 64;     // N
  int64_t memory_limit_bytes = 0;  // 0: budget / memory_fraction from /metrics
  double memory_fraction = 0.9;
  double stop_fraction = 0.85;
};

// Prometheus text -> {"name{labels}": value}.
std::map<std::string, double> parse_prometheus_text(const std::string& text);

Result<RampResult> run_server_ramp(const ServerRampOptions& options, const ProgressFn& progress);

}  // namespace plimsoll::planner
