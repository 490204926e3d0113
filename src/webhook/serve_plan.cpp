// Settings + declared model -> PlanInputs, mirroring engine_setup.cpp and
// serve.cpp field by field; the plan itself is memory/plan_memory.
#include "webhook/serve_plan.h"

#include <algorithm>

namespace plimsoll::webhook {

int64_t serve_http_buffer_bytes(const ServeConfig& serve) {
  return std::min<int64_t>(serve.api.threads, serve.engine.max_concurrent_requests) *
         serve.api.payload_limit_bytes / 8;
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
  PlanInputs in;
  in.config = model.config;
  in.weights_bytes = model.weights_bytes;
  in.block_tokens = o.block_tokens;
  in.max_total_tokens = o.max_total_tokens;
  in.step_tokens = o.step_tokens;
  in.step_seqs = o.step_seqs;
  in.n_threads = threads;
  in.max_concurrent_requests = o.max_concurrent_requests;
  in.runtime_bytes = model.runtime_bytes + o.extra_runtime_bytes + serve_http_buffer_bytes(serve);
  in.budget_bytes = budget_bytes;
  in.max_kv_bytes = o.max_batch_memory_bytes;
  return in;
}

}  // namespace plimsoll::webhook
