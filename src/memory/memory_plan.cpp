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

StepWorkspaceSizes step_workspace_sizes(const ModelConfig& c, int64_t step_tokens,
                                        int64_t step_seqs, int64_t n_threads,
                                        int64_t max_seq_len) {
  StepWorkspaceSizes w;
  const int64_t t = step_tokens, b = std::min(step_seqs, step_tokens);
  w.step_tokens = t;
  w.step_seqs = b;
  w.n_threads = n_threads;
  w.hidden_floats = 3 * t * c.dim;
  w.qkv_floats = t * (c.dim + 2 * c.kv_dim());
  w.ffn_floats = 2 * t * c.ffn_dim;
  w.logits_floats = b * (c.vocab_size + c.dim);
  w.scores_floats = n_threads * max_seq_len;
  w.rope_floats = t * c.head_dim();
  // Matmul activation scratch as the kernels keep it (per-thread buffers that only grow,
  // src/kernels/matmul.cpp): the row path's Q8_0/Q8_K rows (<= 292 B per 256 elements),
  // plus the largest of the AVX-512 tile path's prepared rows (192 B per 64 elements),
  // AMX-INT8's token tiles (36 B per 32 elements, tokens padded to 16) and AMX-BF16's
  // (hi and lo bf16: 4 B per element, columns padded to 32); plus each thread's AMX weight
  // panel scratch: INT8's 576 B per 32 columns, the K-quants' 12672 B per 256 (Q6_K's three
  // pieces, tiles_amx_kquants.cpp) or BF16's panel group (tiles_amx_bf16.cpp: 4-16 panels
  // of 2 KiB per 32 columns, 1 MiB unless 4 panels are more). K-quant AMX token tiles:
  // 4416 B per 256 elements x 16 tokens, within INT8's 36 B per 32. The AVX-512 broadcast
  // kernels for float weights (x86/panels_avx512.cpp) fit AMX-BF16's figures: a token tile
  // (16 tokens of f32) is 64 B per column, columns padded to 16; a 16-row f32 panel 64 B per column.
  const int64_t widest = std::max({c.dim, c.ffn_dim, c.vocab_size > 0 ? c.dim : 0});
  const int64_t chunks = ceil_div(widest, 32), token_tiles = ceil_div(t, 16);
  const int64_t row_path = t * (widest / 256 + 1) * 292;
  const int64_t tile_path = t * (widest / 64 + 1) * 192;
  const int64_t amx_int8 = token_tiles * 16 * (widest / 32) * 36;
  const int64_t amx_bf16 = token_tiles * chunks * 2048;
  const int64_t panel =
      std::max({(widest / 32) * 576, (widest / 256 + 1) * 12672, int64_t{1} << 20, 4 * chunks * 2048});
  w.matmul_scratch_bytes = row_path + std::max({tile_path, amx_int8, amx_bf16}) + n_threads * (panel + 128) + 4096;
  return w;
}

int64_t kv_bytes_per_token(const ModelConfig& c, DType kv_dtype) {
  return 2 * c.n_layers * c.kv_dim() * dtype_traits(kv_dtype).block_bytes /
         dtype_traits(kv_dtype).block_elems;
}

int64_t default_request_budget_bytes(int64_t max_total_tokens, int64_t max_concurrent_requests, int64_t free_bytes) {
  return std::max(max_concurrent_requests * max_total_tokens * kRequestBytesPerToken,
                  std::min(kDefaultRequestBudgetCapBytes, std::max<int64_t>(0, free_bytes) / 3));
}

Result<MemoryPlan> plan_memory(const PlanInputs& in) {
  MemoryPlan p;
  p.inputs = in;
  const ModelConfig& c = in.config;
  if (in.block_tokens <= 0 || in.step_tokens <= 0 || in.step_seqs <= 0 || in.n_threads <= 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "block size, step tokens, step sequences and threads must be positive");
  }
  p.max_total_tokens = in.max_total_tokens > 0 ? std::min(in.max_total_tokens, c.max_seq_len)
                                               : c.max_seq_len;
  p.weights_bytes = in.weights_bytes;
  p.workspace = step_workspace_sizes(c, in.step_tokens, in.step_seqs, in.n_threads, p.max_total_tokens);
  p.workspace_bytes = p.workspace.total_bytes();
  p.transport_bytes = in.transport_bytes;
  p.runtime_bytes = in.runtime_bytes;
  p.kv_bytes_per_token = kv_bytes_per_token(c, in.kv_dtype);
  p.kv_block_bytes = p.kv_bytes_per_token * in.block_tokens;
  p.blocks_per_full_sequence = ceil_div(p.max_total_tokens, in.block_tokens);
  const int64_t free_bytes = in.budget_bytes - p.weights_bytes - p.workspace_bytes - p.transport_bytes -
                             p.runtime_bytes - p.blocks_per_full_sequence * p.kv_block_bytes;
  p.request_bytes = in.request_budget_bytes > 0
                        ? in.request_budget_bytes
                        : default_request_budget_bytes(p.max_total_tokens, in.max_concurrent_requests, free_bytes);

  const int64_t fixed = p.weights_bytes + p.workspace_bytes + p.request_bytes + p.transport_bytes + p.runtime_bytes;
  int64_t pool_bytes = in.budget_bytes - fixed;
  if (in.max_kv_bytes) pool_bytes = std::min(pool_bytes, *in.max_kv_bytes);
  p.kv_blocks = pool_bytes > 0 ? pool_bytes / p.kv_block_bytes : 0;
  p.kv_pool_bytes = p.kv_blocks * p.kv_block_bytes;
  p.max_batch_total_tokens = p.kv_blocks * in.block_tokens;
  if (p.kv_blocks < p.blocks_per_full_sequence) {
    const int64_t need = fixed + p.blocks_per_full_sequence * p.kv_block_bytes;
    return make_error(
        ErrorCode::kOutOfMemory,
        "the model does not fit the memory budget: weights " + format_bytes(p.weights_bytes) +
            " + workspace " + format_bytes(p.workspace_bytes) + " + request memory " +
            format_bytes(p.request_bytes) + " + transport " + format_bytes(p.transport_bytes) + " + runtime " +
            format_bytes(p.runtime_bytes) +
            " + KV for one sequence of " + std::to_string(p.max_total_tokens) + " tokens " +
            format_bytes(p.blocks_per_full_sequence * p.kv_block_bytes) + " = " + format_bytes(need) +
            ", budget " + format_bytes(in.budget_bytes) +
            (in.max_kv_bytes ? " (KV capped at " + format_bytes(*in.max_kv_bytes) + " by --max-batch-memory)" : "") +
            "; raise --memory-limit or --memory-fraction, or lower --max-total-tokens, "
            "--max-batch-prefill-tokens, --max-concurrent-requests or --max-request-memory");
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
  s += row("transport", transport_bytes, "request bodies being read and parsed, connection buffers");
  s += row("runtime", runtime_bytes, "code, libraries, stacks");
  s += row("kv block pool", kv_pool_bytes,
           std::to_string(kv_blocks) + " blocks x " + std::to_string(inputs.block_tokens) + " tokens x " +
               format_bytes(kv_bytes_per_token) + "/token = " + std::to_string(max_batch_total_tokens) +
               " tokens (" + std::to_string(full_sequences()) + " sequences of " +
               std::to_string(max_total_tokens) + ")");
  s += row("total planned", planned_bytes(), "");
  return s;
}

}  // namespace plimsoll
