// The one function from serve's settings + the model's facts + a budget to the
// memory plan. serve, bench, the planner (static plan and ramp child) and the
// admission webhook all plan through it; the arithmetic is memory/plan_memory,
// the step workspace the engine's own (BatchEngine::workspace_sizes).
#pragma once

#include <cstdint>

#include "core/result.h"
#include "core/model_config.h"
#include "memory/memory_plan.h"
#include "server/serve.h"

namespace plimsoll {

// What the plan needs to know of the model and of the process serving it.
struct ModelFacts {
  ModelConfig config;
  int64_t weights_bytes = 0;
  // Resident besides the plan's parts, margin included: planned_runtime_bytes()
  // of what the process holds after loading, or what a workload declares.
  int64_t runtime_bytes = 0;
};

// Engine threads: --threads, else the CPUs available.
int64_t serve_engine_threads(const ServeConfig& settings, int64_t available_cpus);

// The plan's inputs: the settings' plan rows, the engine's step workspace,
// runtime = the model's facts; transport = the HTTP layer's worst case
// (api::transport_worst_case_bytes); requests = --max-request-memory or its default;
// grammar cache = --grammar-cache-memory (none without HTTP workers, as in bench).
// Fails naming the flag when a step size or thread count is not positive.
Result<PlanInputs> serve_plan_inputs(const ServeConfig& settings, const ModelFacts& model, int64_t available_cpus,
                                     int64_t budget_bytes);
// plan_memory(serve_plan_inputs(...)).
Result<MemoryPlan> plan_serve_memory(const ServeConfig& settings, const ModelFacts& model, int64_t available_cpus,
                                     int64_t budget_bytes);

}  // namespace plimsoll
