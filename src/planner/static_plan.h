// The static plan: what `plimsoll serve` with given flags plans under a memory
// limit (plan_serve_memory, the server's own function), read for sequences of P + N tokens.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"
#include "core/model_config.h"
#include "memory/memory_plan.h"
#include "server/serve.h"
#include "server/serve_plan.h"

namespace plimsoll::planner {

// The model as the planner found it: its file, shape, weight bytes and what the
// process holds after loading it.
struct PlanModel {
  std::string path;
  ModelConfig config;
  int64_t weights_bytes = 0;
  int64_t runtime_base_bytes = 0;  // resident before planning (measured after loading, as serve does)
};

struct PlanRequest {
  PlanModel model;
  ServeConfig serve;               // serve's settings (the plan rows matter; defaults as serve's)
  int64_t prompt_tokens = 0;       // P
  int64_t max_new_tokens = 0;      // N
  int64_t memory_limit_bytes = 0;  // the container's limit
};

struct StaticPlan {
  PlanRequest request;
  MemoryPlan plan;                   // with max_total_tokens = P + N
  int64_t budget_bytes = 0;          // limit x memory fraction
  int64_t sequence_tokens = 0;       // P + N
  int64_t max_concurrent_sequences = 0;  // sequences of P + N the KV pool holds at once
  int64_t safe_client_batch_size = 0;    // what serve publishes in /info (at least 1)
  int64_t engine_threads = 0;
};

// The settings serve runs with for this request: its settings with the model,
// --memory-limit, --max-total-tokens P + N and --max-input-tokens P.
ServeConfig serve_config_for(const PlanRequest& request);
// The model's facts as serve plans with them (runtime base + serve's margin).
ModelFacts serve_model_facts(const PlanRequest& request);
// Plans; kOutOfMemory (with serve's message) when one sequence of P + N cannot fit.
Result<StaticPlan> make_static_plan(const PlanRequest& request);
// The smallest memory limit (whole MiB) under which `sequences` sequences of
// P + N run at once: a search over make_static_plan, never an inverted formula.
Result<int64_t> required_memory_limit(PlanRequest request, int64_t sequences);

}  // namespace plimsoll::planner
