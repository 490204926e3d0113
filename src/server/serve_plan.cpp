// Settings + model facts + budget -> PlanInputs -> plan_memory.
#include "server/serve_plan.h"

#include "api/body_budget.h"
#include "engine/batch_engine.h"
#include "kv/block_pool.h"
#include "memory/resident_model.h"

namespace plimsoll {

int64_t serve_engine_threads(const ServeConfig& s, int64_t available_cpus) {
  return s.engine.threads > 0 ? s.engine.threads : available_cpus;
}

Result<PlanInputs> serve_plan_inputs(const ServeConfig& s, const ModelFacts& model, int64_t available_cpus,
                                     int64_t budget_bytes) {
  const EngineOptions& o = s.engine;
  const int64_t threads = serve_engine_threads(s, available_cpus);
  const char* bad = o.step_tokens <= 0 ? "--max-batch-prefill-tokens"
                    : o.step_seqs <= 0  ? "--max-batch-size"
                    : o.block_tokens <= 0 ? "--block-size"
                    : threads <= 0      ? "--threads"
                                        : nullptr;
  if (bad) return make_error(ErrorCode::kInvalidArgument, std::string(bad) + " must be positive");
  if (o.grammar_cache_bytes < 0) return make_error(ErrorCode::kInvalidArgument, "--grammar-cache-memory must not be negative");
  PlanInputs in;
  in.config = model.config;
  in.weights_bytes = model.weights_bytes;
  in.block_tokens = o.block_tokens;
  in.prefix_caching = o.prefix_caching;
  in.kv_bookkeeping_bytes_per_block = KvBlockPool::bookkeeping_bytes_per_block(o.block_tokens, o.prefix_caching);
  in.kv_dtype = o.kv_dtype;
  in.max_total_tokens = o.max_total_tokens;
  in.workspace = BatchEngine::workspace_sizes(model.config, o.step_tokens, o.step_seqs, threads,
                                              plan_sequence_tokens(model.config, o.max_total_tokens));
  in.max_concurrent_requests = o.max_concurrent_requests;
  in.request_budget_bytes = o.request_budget_bytes;
  in.grammar_cache_bytes = s.api.threads > 0 ? o.grammar_cache_bytes : 0;  // no HTTP (bench): no grammars
  // No HTTP workers (bench): no transport (nor grammar cache, above).
  in.transport_bytes = s.api.threads > 0 ? api::transport_worst_case_bytes(s.api, o.max_concurrent_requests) : 0;
  in.runtime_bytes = model.runtime_bytes;
  in.budget_bytes = budget_bytes;
  in.max_kv_bytes = o.max_batch_memory_bytes;
  in.max_kv_tokens = s.max_batch_total_tokens;
  if (const int64_t one = plan_sequence_tokens(model.config, o.max_total_tokens);
      in.max_kv_tokens && *in.max_kv_tokens < blocks_for_tokens(one, o.block_tokens) * o.block_tokens) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--max-batch-total-tokens " + std::to_string(*in.max_kv_tokens) +
                          " holds less than one sequence of " + std::to_string(one) + " tokens (--max-total-tokens) in "
                          + std::to_string(o.block_tokens) + "-token blocks (--block-size)");
  }
  return in;
}

Result<MemoryPlan> plan_serve_memory(const ServeConfig& s, const ModelFacts& model, int64_t available_cpus,
                                     int64_t budget_bytes) {
  PLIMSOLL_ASSIGN(const PlanInputs in, serve_plan_inputs(s, model, available_cpus, budget_bytes));
  return plan_memory(in);
}

}  // namespace plimsoll
