#include "server/service_setup.h"

#include <algorithm>

#include "core/bytes.h"

namespace plimsoll {

Result<sched::ServiceLimits> derive_limits(const ServeConfig& c, const EngineSetup& s) {
  const MemoryPlan& p = s.plan;
  sched::ServiceLimits l;
  l.model_id = c.api.model_id.empty() ? s.model.path : c.api.model_id;
  l.model_dtype = "mixed";
  if (!s.model.tensors.tensors().empty()) {
    const TensorView* q = s.model.tensors.find("blk.0.attn_q.weight");
    l.model_dtype = std::string(dtype_name(q ? q->dtype : s.model.tensors.tensors()[0].dtype));
  }
  l.max_total_tokens = p.max_total_tokens;
  l.max_input_tokens = c.max_input_tokens.value_or(p.max_total_tokens - 1);
  if (l.max_input_tokens >= l.max_total_tokens || l.max_input_tokens < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--max-input-tokens (" + std::to_string(l.max_input_tokens) +
                          ") must be at least 1 and less than --max-total-tokens (" +
                          std::to_string(l.max_total_tokens) + ")");
  }
  l.max_batch_total_tokens = p.max_batch_total_tokens;
  if (c.max_batch_total_tokens) {
    if (*c.max_batch_total_tokens > p.max_batch_total_tokens) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--max-batch-total-tokens " + std::to_string(*c.max_batch_total_tokens) +
                            " does not fit the memory plan, which holds " +
                            std::to_string(p.max_batch_total_tokens) + " tokens of KV cache (" +
                            format_bytes(p.kv_pool_bytes) + "); lower it or raise --memory-limit");
    }
    l.max_batch_total_tokens = *c.max_batch_total_tokens;
  }
  l.max_batch_prefill_tokens = p.workspace.step_tokens;
  l.max_batch_size = p.workspace.step_seqs;
  l.max_concurrent_requests = c.engine.max_concurrent_requests;
  l.max_queued_tokens = c.max_queued_tokens.value_or(4 * l.max_batch_total_tokens);
  l.max_client_batch_size = 0;  // lists of any length are split server-side
  l.safe_client_batch_size = std::max<int64_t>(1, p.full_sequences());
  l.vocab_size = s.model.config.vocab_size;
  return l;
}

sched::EngineServiceConfig engine_service_config(const ServeConfig& c, const EngineSetup& s,
                                                 const sched::ServiceLimits& limits) {
  sched::EngineServiceConfig out;
  out.limits = limits;
  out.scheduler.step_tokens = s.plan.workspace.step_tokens;
  out.scheduler.step_seqs = s.plan.workspace.step_seqs;
  out.scheduler.max_skips = c.max_waiting_tokens;
  out.scheduler.tenants = c.tenants;
  out.scheduler.prefix_cache_across_tenants = c.prefix_cache_across_tenants;
  out.extra_eos_ids = c.api.generation_defaults.eos_token_ids;
  out.request_budget_bytes = s.plan.request_bytes;
  out.token_trie = s.token_trie;
  return out;
}

}  // namespace plimsoll
