// BatchEngine: one batched step of a decoder (Llama, GPT-2, BLOOM) over the paged KV cache.
// Many sequences advance together: each brings a span of new tokens (a
// prefill chunk or one decode token); matrix products run over all the
// step's tokens at once; attention reads each sequence's own blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "memory/memory_plan.h"
#include "model/decoder_weights.h"

namespace plimsoll {

// One sequence's share of a step.
struct SeqStep {
  std::span<const int32_t> tokens;  // new tokens, at positions start_pos, start_pos + 1, ...
  int64_t start_pos = 0;            // tokens before these are already in the KV cache
  const BlockTable* blocks = nullptr;  // must hold start_pos + tokens.size() positions
  bool want_logits = false;         // logits for the last of these tokens
  // Logits of every other token of the span too (prompt logprobs): passed to
  // step()'s LogitRowSink, a row at a time, never returned.
  bool want_all_logits = false;
};

// Receives the logits of the rows a step computes for want_all_logits spans.
class LogitRowSink {
 public:
  virtual ~LogitRowSink() = default;
  // seq: the SeqStep's index; pos: the token's position; logits: [vocab], valid during the call.
  virtual void row(size_t seq, int64_t pos, std::span<const float> logits) = 0;
};

class BatchEngine {
 public:
  // The buffers a step of up to step_tokens tokens (T) and step_seqs sequences
  // (B) needs, with the kernels' matmul scratch for n_threads threads: what
  // create() allocates and what the memory plan counts (it owns this formula).
  static StepWorkspaceSizes workspace_sizes(const ModelConfig& config, int64_t step_tokens, int64_t step_seqs,
                                            int64_t n_threads, int64_t max_seq_len);

  // Allocates the step workspace exactly as `sizes` (workspace_sizes(), through the plan) says.
  static Result<std::unique_ptr<BatchEngine>> create(const ModelConfig& config, DecoderWeights weights,
                                                     KvBlockPool& pool,
                                                     const StepWorkspaceSizes& sizes,
                                                     ThreadPool* threads);

  // Runs the step; returns logits [n_want, vocab], one row per sequence with
  // want_logits, in order. The span lives until the next step. Fails (no
  // state changed) when the step exceeds the workspace or a block table is short.
  // The tokens of want_all_logits spans (all but the returned row) go to
  // `rows` first, step_seqs rows per output-head matmul, in the same buffers.
  Result<std::span<const float>> step(std::span<const SeqStep> seqs, LogitRowSink* rows = nullptr);

  // Runs one step of the largest size with dummy data, so every lazily grown
  // buffer (kernel scratch) reaches its peak before serving; the KV cache is
  // untouched (uses no blocks).
  Status warm_up();

  const ModelConfig& config() const { return config_; }
  const StepWorkspaceSizes& sizes() const { return sizes_; }

 private:
  BatchEngine(const ModelConfig& config, DecoderWeights weights, KvBlockPool& pool,
              const StepWorkspaceSizes& sizes, ThreadPool* threads);
  Status check(std::span<const SeqStep> seqs, int64_t* n_tokens, int64_t* n_want) const;
  void layer(int64_t l, int64_t n_tokens);
  void write_kv(int64_t l, int64_t n_tokens);  // tokens split across the pool (for_rows)
  void write_kv_rows(int64_t l, int64_t n_tokens, int64_t i0, int64_t i1);
  void store_kv_row(const float* src, void* dst, int64_t offset, int64_t n) const;
  void attention(int64_t l);  // over the step's pieces
  void add_into_residual(const float* delta, int64_t n_tokens);
  void emit_all_rows(std::span<const SeqStep> seqs, LogitRowSink& rows);

  ModelConfig config_;
  DecoderWeights weights_;
  KvBlockPool& pool_;
  StepWorkspaceSizes sizes_;
  ThreadPool* threads_;
  std::vector<float> alibi_;  // [n_heads] ALiBi slopes (empty unless ALiBi)
  // per-token metadata of the current step, [T]
  std::vector<int32_t> tok_id_, tok_seq_;
  std::vector<int64_t> tok_pos_;
  // the step's attention pieces: runs of <= kPieceTokens consecutive tokens of one sequence
  struct Piece {
    int64_t first_token, n;
  };
  static constexpr int64_t kPieceTokens = 16;
  std::vector<Piece> pieces_;
  std::span<const SeqStep> seqs_;
  // activations
  std::vector<float> x_;      // [T, dim] residual stream
  std::vector<float> xb_;     // [T, dim] normed input
  std::vector<float> attn_;   // [T, dim] attention output
  std::vector<float> q_;      // [T, dim] queries; reused for the wo and w_down outputs
  std::vector<float> k_, v_;  // [T, kv_dim]
  std::vector<float> hb_, hb2_;  // [T, ffn]
  std::vector<float> rope_;      // [T, head_dim] (x2 with local RoPE: local after global): cos, sin of each token's rotary angles
  std::vector<float> last_;   // [B, dim] final-normed rows that need logits
  std::vector<float> logits_; // [B, vocab]
  std::vector<std::pair<size_t, int64_t>> row_owner_;  // [B] (seq, position) of each row in last_ (emit_all_rows)
};

}  // namespace plimsoll
