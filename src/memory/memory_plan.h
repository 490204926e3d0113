// The memory plan: every byte the server will use, decided before the first
// request — weights + fixed step workspace + request memory (admission's byte
// budget) + grammar cache (compiled grammars shared by requests) + transport
// (bodies in flight and their JSON) + runtime, and the
// rest of the budget becomes the KV block pool. The one
// memory model shared by the server, the planner and the admission webhook.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "core/result.h"
#include "core/model_config.h"

namespace plimsoll {

// Sizes (in floats) of the activation buffers of one batched step. The engine
// reports them (BatchEngine::workspace_sizes) and allocates exactly these; the
// plan counts exactly these.
struct StepWorkspaceSizes {
  int64_t step_tokens = 0;     // T: tokens per step (prefill chunks + decode tokens)
  int64_t step_seqs = 0;       // B: sequences per step (rows that need logits)
  int64_t n_threads = 0;
  int64_t hidden_floats = 0;   // x, xb [T, dim], attn_out [T, q_dim]
  int64_t qkv_floats = 0;      // q [T, max(dim, q_dim)], k and v [T, kv_dim]
  int64_t ffn_floats = 0;      // gate and up: 2 x [T, ffn]
  int64_t logits_floats = 0;   // [B, vocab] + the final norm rows [B, dim]
  int64_t scores_floats = 0;   // attention scores: [n_threads, max_seq_len]
  int64_t rope_floats = 0;     // rotary cos/sin of each token: [T, head_dim]
  int64_t matmul_scratch_bytes = 0;  // quantized activations of [T, max(dim, ffn, q_dim)] (~4.2 B each)
  // Grammar masks computed beside the forward pass (sched/mask_ahead.h):
  // [B, vocab / 64] words + the mask thread's scratch.
  int64_t grammar_mask_bytes = 0;

  int64_t total_bytes() const {
    return (hidden_floats + qkv_floats + ffn_floats + logits_floats + scores_floats + rope_floats) * 4 +
           matmul_scratch_bytes + grammar_mask_bytes;
  }
};

// Tokens one sequence may hold: max_total_tokens capped by the context (0: the context).
int64_t plan_sequence_tokens(const ModelConfig& config, int64_t max_total_tokens);

// KV bytes one token occupies across all layers: 2 (k, v) x layers x kv_dim x dtype size.
int64_t kv_bytes_per_token(const ModelConfig& config, DType kv_dtype);

struct PlanInputs {
  ModelConfig config;
  int64_t weights_bytes = 0;           // resident weight bytes (mapped or owned)
  DType kv_dtype = DType::kF16;         // KV cache elements: kF16 (serve's default) or kF32
  int64_t block_tokens = 16;           // KV block size
  // The pool's bookkeeping per block besides its KV (free list, reference
  // counts, prefix-cache keys, tokens and index: KvBlockPool::bookkeeping_bytes_per_block).
  int64_t kv_bookkeeping_bytes_per_block = 0;
  bool prefix_caching = false;         // said in the table; its bookkeeping is the line above
  int64_t max_total_tokens = 0;        // per sequence: prompt + new (<= context); 0 = context
  StepWorkspaceSizes workspace;        // the engine's, for the largest step (BatchEngine::workspace_sizes)
  int64_t max_concurrent_requests = 128;   // in flight + queued
  // Request memory in flight: what admission may charge all submissions
  // together (sched/request_cost.h); 0 = default_request_budget_bytes.
  int64_t request_budget_bytes = 0;
  // Compiled grammars kept and shared by requests (--grammar-cache-memory;
  // engine/grammar/grammar_cache.h): a fixed budget, 0 = no cache.
  int64_t grammar_cache_bytes = 0;
  // HTTP bodies being read and parsed (x (1 + the JSON tree factor)) and
  // connection buffers: the transport's worst case.
  int64_t transport_bytes = 0;
  int64_t runtime_bytes = 48 << 20;    // code, libraries, thread stacks, allocator slack
  int64_t budget_bytes = 0;            // what the plan may spend (limit x fraction)
  std::optional<int64_t> max_kv_bytes; // cap on the pool (--max-batch-memory)
  std::optional<int64_t> max_kv_tokens; // cap on the pool in tokens (--max-batch-total-tokens)
};

struct MemoryPlan {
  PlanInputs inputs;
  int64_t weights_bytes = 0;
  int64_t workspace_bytes = 0;
  int64_t request_bytes = 0;           // admission's byte budget: prompts, stops, bookkeeping, responses
  int64_t grammar_cache_bytes = 0;     // the grammar cache's budget (entries charged their whole lazy budget)
  int64_t transport_bytes = 0;         // bodies in flight and their JSON trees, connection buffers
  int64_t runtime_bytes = 0;
  int64_t kv_bytes_per_token = 0;
  int64_t kv_block_bytes = 0;
  int64_t kv_blocks = 0;
  int64_t kv_pool_bytes = 0;
  int64_t kv_bookkeeping_bytes = 0;    // kv_blocks x inputs.kv_bookkeeping_bytes_per_block
  int64_t max_total_tokens = 0;        // per sequence
  int64_t max_batch_total_tokens = 0;  // tokens the pool holds: kv_blocks x block_tokens
  int64_t blocks_per_full_sequence = 0;
  StepWorkspaceSizes workspace;

  int64_t planned_bytes() const {
    return weights_bytes + workspace_bytes + request_bytes + grammar_cache_bytes + transport_bytes + runtime_bytes +
           kv_pool_bytes + kv_bookkeeping_bytes;
  }
  // Sequences of max_total_tokens that fit the pool at once.
  int64_t full_sequences() const {
    return blocks_per_full_sequence ? kv_blocks / blocks_per_full_sequence : 0;
  }
  // A human-readable table (one part a line) for start-up logs and `plimsoll plan`.
  std::string table() const;
};

// Plans; fails with kOutOfMemory when weights + workspace + request, grammar
// cache and transport memory + runtime + one full-length sequence do not fit, with the
// numbers and the flags to change.
Result<MemoryPlan> plan_memory(const PlanInputs& inputs);

// The default request budget (--max-request-memory): every request in flight
// at max_total_tokens, kRequestBytesPerToken each (a plain answer's texts and
// sequence state), or, when more, half of what the plan leaves for the KV
// pool (`free_bytes`: after the fixed parts but the grammar cache, which comes
// out of the pool, and one full sequence) up to
// kDefaultRequestBudgetCapBytes (room for a large client batch). Requests
// with details or logprobs cost more and share it: admission answers 429, or
// 422 with the numbers.
inline constexpr int64_t kRequestBytesPerToken = 256;
inline constexpr int64_t kDefaultRequestBudgetCapBytes = int64_t{64} << 20;
int64_t default_request_budget_bytes(int64_t max_total_tokens, int64_t max_concurrent_requests, int64_t free_bytes);

}  // namespace plimsoll
