// Settings + declared model -> PlanInputs through serve's own mapping
// (plan_inputs_for, http_body_runtime_bytes); the plan itself is memory/plan_memory.
#include "webhook/serve_plan.h"

#include <algorithm>

#include "memory/resident_model.h"
#include "server/engine_setup.h"

namespace plimsoll::webhook {

int64_t serve_http_buffer_bytes(const ServeConfig& serve) {
  return http_body_runtime_bytes(serve.api.threads, serve.engine.max_concurrent_requests,
                                 serve.api.payload_limit_bytes);
}

int64_t serve_threads(const ContainerSettings& s, int64_t node_cpus) {
  if (s.threads_set) return s.serve.engine.threads;
  // Without --threads the server takes every CPU of its affinity mask: the node's,
  // unless the static CPU manager pins it to its (integer) limit.
  return node_cpus;
}

PlanInputs serve_plan_inputs(const ServeConfig& serve, const ModelMetadata& model, int64_t threads,
                             int64_t budget_bytes) {
  const EngineOptions& o = serve.engine;
  PlanInputs in = plan_inputs_for(o, model.config, model.weights_bytes, threads,
                                  model.runtime_bytes + o.extra_runtime_bytes, budget_bytes);
  in.transport_bytes = serve_http_buffer_bytes(serve);
  return in;
}

}  // namespace plimsoll::webhook
