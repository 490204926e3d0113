// What `plimsoll plan` hands people: the serve flags, a Kubernetes resources
// block and HPA, and the whole result as a table or as JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "planner/pool_plan.h"
#include "planner/ramp.h"
#include "planner/static_plan.h"

namespace plimsoll::planner {

struct PlanReport {
  StaticPlan plan;
  std::string limit_source;                    // "--memory-limit", "resources (path)", "--target-concurrency"
  std::optional<int64_t> target_concurrency;   // the reverse question, when asked
  std::optional<RampResult> ramp;
  std::optional<PoolPlan> pool;                // when a target load was given
  std::string chart_svg_path, chart_png_path;  // "" when not written
};

// `plimsoll serve` args that reproduce this plan (serve's settings table:
// --tokenizer, every plan setting and every other one not at its default).
// serve_flags: without --model; serve_command: the whole command line.
std::vector<std::string> serve_flags(const StaticPlan& plan);
std::string serve_command(const StaticPlan& plan);
// "12Gi" when whole GiB, else whole MiB rounded up ("300Mi").
std::string kubernetes_quantity(int64_t bytes);
// {"resources": {...}, "hpa": {...}}: requests = limits (Guaranteed QoS), HPA on 70 % memory,
// its replicas from `pool` when a target load was given (else 1-10).
nlohmann::json kubernetes_json(const StaticPlan& plan, const PoolPlan* pool = nullptr);
std::string kubernetes_yaml(const StaticPlan& plan, const PoolPlan* pool = nullptr);
// The pool for a target load: per replica, in flight, replicas, HPA bounds.
nlohmann::json pool_json(const PoolPlan& pool);
std::string pool_text(const PoolPlan& pool, const StaticPlan& plan);

nlohmann::json ramp_json(const RampResult& ramp);
nlohmann::json report_json(const PlanReport& report);
std::string report_text(const PlanReport& report);
// The ramp alone: one row per step, why it stopped, the measured ceiling.
std::string ramp_text(const RampResult& ramp);

}  // namespace plimsoll::planner
