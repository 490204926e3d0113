// Engine set-up: load, budget, plan, allocate per plan, warm up.
#include "server/engine_setup.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "memory/process_memory.h"
#include "memory/resident_model.h"

namespace plimsoll {

Result<DType> kv_cache_dtype_from_name(const std::string& name) {
  const std::optional<DType> d = dtype_from_name(name);
  if (!d || (*d != DType::kF16 && *d != DType::kF32)) {
    return make_error(ErrorCode::kInvalidArgument, "KV cache dtype '" + name + "': use f16 or f32");
  }
  return *d;
}

PlanInputs plan_inputs_for(const EngineOptions& o, const ModelConfig& config, int64_t weights_bytes,
                           int64_t n_threads, int64_t runtime_bytes, int64_t budget_bytes) {
  PlanInputs in;
  in.config = config;
  in.weights_bytes = weights_bytes;
  in.block_tokens = o.block_tokens;
  in.kv_dtype = o.kv_dtype;
  in.max_total_tokens = o.max_total_tokens;
  in.step_tokens = o.step_tokens;
  in.step_seqs = o.step_seqs;
  in.n_threads = n_threads;
  in.max_concurrent_requests = o.max_concurrent_requests;
  in.request_budget_bytes = o.request_budget_bytes;
  in.transport_bytes = o.transport_bytes;
  in.runtime_bytes = runtime_bytes;
  in.budget_bytes = budget_bytes;
  in.max_kv_bytes = o.max_batch_memory_bytes;
  return in;
}

Result<EngineSetup> load_engine_model(const EngineOptions& o) {
  EngineSetup s;
  PLIMSOLL_ASSIGN(s.model, load_model(o.model_path, weights_backing(o)));
  PLIMSOLL_ASSIGN(s.tokenizer, load_model_tokenizer(s.model, o.tokenizer_path));
  PLIMSOLL_ASSIGN(s.weights, bind_llama_weights(s.model.config, s.model.tensors));
  return s;
}

Result<EngineSetup> setup_engine(const EngineOptions& o) {
  PLIMSOLL_ASSIGN(EngineSetup s, load_engine_model(o));
  PLIMSOLL_TRY(plan_and_start_engine(o, s));
  return s;
}

int64_t resident_bytes_besides_weights(const LoadedModel& model) {
  return std::max<int64_t>(0, read_process_memory().resident_bytes - model.tensors.resident_copy_bytes());
}

Status plan_and_start_engine(const EngineOptions& o, EngineSetup& s) {
  PLIMSOLL_ASSIGN(s.budget, resolve_memory_budget(o.memory_limit_bytes, o.memory_fraction));

  const int n_threads = o.threads > 0 ? o.threads : ThreadPool::hardware_threads();
  // What the process holds before any plan (binary, libraries, tokenizer
  // tables), with room for thread stacks and allocator slack on top.
  const PlanInputs in = plan_inputs_for(
      o, s.model.config, s.model.tensors.total_bytes(), n_threads,
      planned_runtime_bytes(resident_bytes_besides_weights(s.model), o.extra_runtime_bytes), s.budget.budget_bytes);
  PLIMSOLL_ASSIGN(s.plan, plan_memory(in));

  s.threads = std::make_unique<ThreadPool>(n_threads);
  PLIMSOLL_ASSIGN(s.pool, KvBlockPool::create(s.model.config, s.plan.kv_blocks, o.block_tokens, o.kv_dtype));
  PLIMSOLL_ASSIGN(s.engine, BatchEngine::create(s.model.config, std::move(*s.weights), *s.pool, s.plan.workspace,
                                                s.threads.get()));
  s.weights.reset();
  PLIMSOLL_TRY(s.engine->warm_up());
  return {};
}

}  // namespace plimsoll
