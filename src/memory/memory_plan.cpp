// The memory model: sizes of weights, KV, workspace and overhead, and the
// KV pool that the rest of the budget buys.
#include "memory/memory_plan.h"

#include <algorithm>
#include <cstdio>

#include "core/bytes.h"

namespace plimsoll {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string row(const char* name, int64_t bytes, const std::string& note) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-22s %14s  %s\n", name, format_bytes(bytes).c_str(), note.c_str());
  return buf;
}

}  // namespace

int64_t plan_sequence_tokens(const ModelConfig& c, int64_t max_total_tokens) {
  return max_total_tokens > 0 ? std::min(max_total_tokens, c.max_seq_len) : c.max_seq_len;
}

int64_t kv_bytes_per_token(const ModelConfig& c, DType kv_dtype) {
  return 2 * c.n_layers * c.kv_dim() * dtype_traits(kv_dtype).block_bytes /
         dtype_traits(kv_dtype).block_elems;
}

int64_t default_request_budget_bytes(int64_t max_total_tokens, int64_t max_concurrent_requests, int64_t free_bytes) {
  return std::max(max_concurrent_requests * max_total_tokens * kRequestBytesPerToken,
                  std::min(kDefaultRequestBudgetCapBytes, std::max<int64_t>(0, free_bytes) / 2));
}

Result<MemoryPlan> plan_memory(const PlanInputs& in) {
  MemoryPlan p;
  p.inputs = in;
  const ModelConfig& c = in.config;
  if (in.block_tokens <= 0) return make_error(ErrorCode::kInvalidArgument, "block size must be positive");
  p.max_total_tokens = plan_sequence_tokens(c, in.max_total_tokens);
  p.weights_bytes = in.weights_bytes;
  p.workspace = in.workspace;
  p.workspace_bytes = p.workspace.total_bytes();
  p.transport_bytes = in.transport_bytes;
  p.grammar_cache_bytes = std::max<int64_t>(0, in.grammar_cache_bytes);
  p.runtime_bytes = in.runtime_bytes;
  p.kv_bytes_per_token = kv_bytes_per_token(c, in.kv_dtype);
  p.kv_block_bytes = p.kv_bytes_per_token * in.block_tokens;
  p.blocks_per_full_sequence = ceil_div(p.max_total_tokens, in.block_tokens);
  const int64_t block_cost = p.kv_block_bytes + in.kv_bookkeeping_bytes_per_block;  // a block and its bookkeeping
  // (The grammar cache is not counted here: it comes out of the pool, so the
  // request memory's default is the same with or without it.)
  const int64_t free_bytes = in.budget_bytes - p.weights_bytes - p.workspace_bytes - p.transport_bytes -
                             p.runtime_bytes - p.blocks_per_full_sequence * block_cost;
  p.request_bytes = in.request_budget_bytes > 0
                        ? in.request_budget_bytes
                        : default_request_budget_bytes(p.max_total_tokens, in.max_concurrent_requests, free_bytes);

  const int64_t fixed = p.weights_bytes + p.workspace_bytes + p.request_bytes + p.grammar_cache_bytes +
                        p.transport_bytes + p.runtime_bytes;
  const int64_t pool_bytes = in.budget_bytes - fixed;
  p.kv_blocks = pool_bytes > 0 ? pool_bytes / block_cost : 0;
  if (in.max_kv_bytes) p.kv_blocks = std::min(p.kv_blocks, std::max<int64_t>(0, *in.max_kv_bytes) / p.kv_block_bytes);
  if (in.max_kv_tokens) p.kv_blocks = std::min(p.kv_blocks, std::max<int64_t>(0, *in.max_kv_tokens) / in.block_tokens);
  p.kv_pool_bytes = p.kv_blocks * p.kv_block_bytes;
  p.kv_bookkeeping_bytes = p.kv_blocks * in.kv_bookkeeping_bytes_per_block;
  p.max_batch_total_tokens = p.kv_blocks * in.block_tokens;
  if (p.kv_blocks < p.blocks_per_full_sequence) {
    const int64_t need = fixed + p.blocks_per_full_sequence * block_cost;
    return make_error(
        ErrorCode::kOutOfMemory,
        "the model does not fit the memory budget: weights " + format_bytes(p.weights_bytes) +
            " + workspace " + format_bytes(p.workspace_bytes) + " + request memory " +
            format_bytes(p.request_bytes) + " + grammar cache " + format_bytes(p.grammar_cache_bytes) +
            " + transport " + format_bytes(p.transport_bytes) + " + runtime " +
            format_bytes(p.runtime_bytes) +
            " + KV for one sequence of " + std::to_string(p.max_total_tokens) + " tokens " +
            format_bytes(p.blocks_per_full_sequence * block_cost) + " = " + format_bytes(need) +
            ", budget " + format_bytes(in.budget_bytes) +
            (in.max_kv_bytes ? " (KV capped at " + format_bytes(*in.max_kv_bytes) + " by --max-batch-memory)" : "") +
            "; raise --memory-limit or --memory-fraction, or lower --max-total-tokens, "
            "--max-batch-prefill-tokens, --max-concurrent-requests, --max-request-memory or --grammar-cache-memory");
  }
  return p;
}

std::string MemoryPlan::table() const {
  std::string s = "memory plan (budget " + format_bytes(inputs.budget_bytes) + "):\n";
  s += row("weights", weights_bytes, "");
  s += row("step workspace", workspace_bytes,
           std::to_string(workspace.step_tokens) + " tokens x " + std::to_string(workspace.step_seqs) +
               " sequences per step");
  s += row("requests+responses", request_bytes,
           "prompts, stops, bookkeeping and responses in flight (admission's byte budget, " +
               std::to_string(inputs.max_concurrent_requests) + " requests)");
  s += row("grammar cache", grammar_cache_bytes,
           "compiled grammars shared by requests with the same schema, pattern or tools (--grammar-cache-memory)");
  s += row("transport", transport_bytes, "request bodies being read and parsed, connection buffers");
  s += row("runtime", runtime_bytes, "code, libraries, stacks");
  s += row("kv block pool", kv_pool_bytes,
           std::to_string(kv_blocks) + " blocks x " + std::to_string(inputs.block_tokens) + " tokens x " +
               format_bytes(kv_bytes_per_token) + "/token = " + std::to_string(max_batch_total_tokens) +
               " tokens (" + std::to_string(full_sequences()) + " sequences of " +
               std::to_string(max_total_tokens) + ")");
  s += row("kv bookkeeping", kv_bookkeeping_bytes,
           std::string("free list, reference counts") +
               (inputs.prefix_caching ? ", prefix-cache keys, tokens and index (prefix caching on)"
                                      : " (prefix caching off)"));
  s += row("total planned", planned_bytes(), "");
  return s;
}

}  // namespace plimsoll
