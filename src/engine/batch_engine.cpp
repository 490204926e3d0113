// The batched, paged forward pass: matmuls over all tokens of the step,
// per-token positions (RoPE angles once per step) and KV writes into blocks, attention per
// (KV head, run of up to 16 tokens of a sequence) with an online softmax that streams the
// sequence's blocks once per run.
#include "engine/batch_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/grammar/token_trie.h"
#include "kernels/attention.h"
#include "kernels/kernels.h"
#include "kernels/scratch.h"
#include "model/layer_ops.h"

namespace plimsoll {
namespace {

constexpr int64_t kMaxHeadDim = 512;

std::vector<float> floats(int64_t n) { return std::vector<float>(static_cast<size_t>(n)); }

// Rotary angle tables per step: a second one when local layers rotate with their own base (Gemma 3).
int64_t rope_tables(const ModelConfig& c) { return c.rope_theta_local > 0.0f ? 2 : 1; }

// The widest row a matmul reads: dim, ffn or q_dim (attn_output; the output head reads dim).
int64_t widest_matmul_cols(const ModelConfig& c) { return std::max({c.dim, c.ffn_dim, c.q_dim()}); }

}  // namespace

StepWorkspaceSizes BatchEngine::workspace_sizes(const ModelConfig& c, int64_t step_tokens, int64_t step_seqs,
                                                int64_t n_threads, int64_t max_seq_len) {
  StepWorkspaceSizes w;
  const int64_t t = step_tokens, b = std::min(step_seqs, step_tokens);
  w.step_tokens = t;
  w.step_seqs = b;
  w.n_threads = n_threads;
  const int64_t q = std::max(c.dim, c.q_dim());    // q_ also takes [t, dim] outputs
  w.hidden_floats = 2 * t * c.dim + t * c.q_dim(); // x_, xb_, attn_
  w.qkv_floats = t * (q + 2 * c.kv_dim());         // q_, k_, v_
  w.ffn_floats = 2 * t * c.ffn_dim;                // hb_, hb2_
  w.logits_floats = b * (c.vocab_size + c.dim);    // logits_, last_
  w.scores_floats = n_threads * max_seq_len;       // a score row per thread: attention keeps its online softmax on the stack, so this is margin
  w.rope_floats = rope_tables(c) * t * c.head_dim(); // rope_: global (and local) angles
  w.matmul_scratch_bytes = kernels::matmul_scratch_bytes(widest_matmul_cols(c), t, n_threads);
  w.grammar_mask_bytes = b * (c.vocab_size + 63) / 64 * 8 + GrammarScratch::bytes_for_vocab(c.vocab_size);
  return w;
}

Result<std::unique_ptr<BatchEngine>> BatchEngine::create(const ModelConfig& config, DecoderWeights weights,
                                                         KvBlockPool& pool,
                                                         const StepWorkspaceSizes& sizes,
                                                         ThreadPool* threads) {
  if (config.head_dim() > kMaxHeadDim) {
    return make_error(ErrorCode::kUnsupported, "head dimension " + std::to_string(config.head_dim()) +
                                                   " is larger than " + std::to_string(kMaxHeadDim));
  }
  if (pool.kv_dim() != config.kv_dim()) {
    return make_error(ErrorCode::kInternal, "KV pool was made for another model");
  }
  return std::unique_ptr<BatchEngine>(new BatchEngine(config, std::move(weights), pool, sizes, threads));
}

BatchEngine::BatchEngine(const ModelConfig& config, DecoderWeights weights, KvBlockPool& pool,
                         const StepWorkspaceSizes& sizes, ThreadPool* threads)
    : config_(config),
      weights_(std::move(weights)),
      pool_(pool),
      sizes_(sizes),
      threads_(threads),
      alibi_(alibi_slopes(config)) {
  const int64_t t = sizes.step_tokens, b = sizes.step_seqs;
  tok_id_.resize(static_cast<size_t>(t));
  tok_seq_.resize(static_cast<size_t>(t));
  tok_pos_.resize(static_cast<size_t>(t));
  pieces_.reserve(static_cast<size_t>(t));
  x_ = floats(t * config.dim);
  xb_ = floats(t * config.dim);
  attn_ = floats(t * config.q_dim());
  q_ = floats(t * std::max(config.dim, config.q_dim()));
  k_ = floats(t * config.kv_dim());
  v_ = floats(t * config.kv_dim());
  hb_ = floats(t * config.ffn_dim);
  hb2_ = floats(t * config.ffn_dim);
  rope_ = floats(rope_tables(config) * t * config.head_dim());
  last_ = floats(b * config.dim);
  logits_ = floats(b * config.vocab_size);
  row_owner_.resize(static_cast<size_t>(b));
}

Status BatchEngine::check(std::span<const SeqStep> seqs, int64_t* n_tokens, int64_t* n_want) const {
  *n_tokens = 0;
  *n_want = 0;
  for (const SeqStep& s : seqs) {
    const int64_t end = s.start_pos + static_cast<int64_t>(s.tokens.size());
    if (!s.blocks || s.blocks->capacity_tokens(pool_.block_tokens()) < end || s.start_pos < 0) {
      return make_error(ErrorCode::kInternal, "a sequence's block table does not cover position " +
                                                  std::to_string(end - 1));
    }
    if (config_.positions == PositionKind::kLearned && end > config_.max_seq_len) {
      return make_error(ErrorCode::kInvalidArgument,
                        "position " + std::to_string(end - 1) + " is past the model's " +
                            std::to_string(config_.max_seq_len) + " learned positions");
    }
    for (int32_t id : s.tokens) {
      if (id < 0 || id >= config_.vocab_size) {
        return make_error(ErrorCode::kInvalidArgument, "token id " + std::to_string(id) + " is outside the vocabulary");
      }
    }
    *n_tokens += static_cast<int64_t>(s.tokens.size());
    if (s.want_logits && !s.tokens.empty()) ++*n_want;
  }
  if (*n_tokens > sizes_.step_tokens || *n_want > sizes_.step_seqs) {
    return make_error(ErrorCode::kInternal,
                      "step of " + std::to_string(*n_tokens) + " tokens / " + std::to_string(*n_want) +
                          " logit rows exceeds the workspace (" + std::to_string(sizes_.step_tokens) +
                          " / " + std::to_string(sizes_.step_seqs) + ")");
  }
  return {};
}

// Every row of the want_all_logits spans but a returned one: final norm into
// last_, the head into logits_, B rows at a time, each handed to `rows`.
void BatchEngine::emit_all_rows(std::span<const SeqStep> seqs, LogitRowSink& rows) {
  const int64_t dim = config_.dim, vocab = config_.vocab_size, cap = sizes_.step_seqs;
  int64_t n = 0, first = 0;
  auto flush = [&] {
    if (n == 0) return;
    kernels::matmul(*weights_.output, last_.data(), n, logits_.data(), threads_);
    softcap_logits(config_, logits_.data(), n * vocab);
    for (int64_t i = 0; i < n; ++i) {
      const auto [seq, pos] = row_owner_[static_cast<size_t>(i)];
      rows.row(seq, pos, std::span<const float>(logits_.data() + i * vocab, static_cast<size_t>(vocab)));
    }
    n = 0;
  };
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int64_t len = static_cast<int64_t>(seqs[s].tokens.size());
    const int64_t count = !seqs[s].want_all_logits ? 0 : seqs[s].want_logits ? len - 1 : len;
    for (int64_t i = 0; i < count; ++i) {
      norm_rows(config_, *weights_.output_norm, weights_.output_norm_b, x_.data() + (first + i) * dim,
                last_.data() + n * dim, 1);
      row_owner_[static_cast<size_t>(n)] = {s, seqs[s].start_pos + i};
      if (++n == cap) flush();
    }
    first += len;
  }
  flush();
}

Result<std::span<const float>> BatchEngine::step(std::span<const SeqStep> seqs, LogitRowSink* rows) {
  int64_t n_tokens = 0, n_want = 0;
  PLIMSOLL_TRY(check(seqs, &n_tokens, &n_want));
  seqs_ = seqs;
  const int64_t dim = config_.dim;
  int64_t t = 0;
  pieces_.clear();  // capacity: step_tokens, so no allocation
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int64_t n = static_cast<int64_t>(seqs[s].tokens.size());
    for (int64_t p = 0; p < n; p += kPieceTokens) pieces_.push_back({t + p, std::min(kPieceTokens, n - p)});
    for (int64_t i = 0; i < n; ++i, ++t) {
      tok_id_[static_cast<size_t>(t)] = seqs[s].tokens[static_cast<size_t>(i)];
      tok_seq_[static_cast<size_t>(t)] = static_cast<int32_t>(s);
      tok_pos_[static_cast<size_t>(t)] = seqs[s].start_pos + i;
    }
  }
  if (config_.positions == PositionKind::kRope) {  // each token's rotary angles, for every layer
    const int64_t hd = config_.head_dim();
    for (int64_t i = 0; i < n_tokens; ++i) {
      const int64_t pos = tok_pos_[static_cast<size_t>(i)];
      rope_angles(config_, pos, rope_.data() + i * hd);
      if (rope_tables(config_) == 2) rope_angles(config_, pos, rope_.data() + (n_tokens + i) * hd, true);
    }
  }
  for (int64_t i = 0; i < n_tokens; ++i) {  // x[i] = embedding(token i at its position)
    embed(config_, weights_, tok_id_[static_cast<size_t>(i)], tok_pos_[static_cast<size_t>(i)],
          x_.data() + i * dim, xb_.data());
  }
  for (int64_t l = 0; l < config_.n_layers; ++l) layer(l, n_tokens);
  if (rows) emit_all_rows(seqs, *rows);  // before the returned rows, which share the buffers
  // final norm on the last token of each sequence that wants logits, then the head
  int64_t row = 0, end = 0;
  for (const SeqStep& s : seqs) {
    end += static_cast<int64_t>(s.tokens.size());
    if (!s.want_logits || s.tokens.empty()) continue;
    norm_rows(config_, *weights_.output_norm, weights_.output_norm_b, x_.data() + (end - 1) * dim,
              last_.data() + row * dim, 1);
    ++row;
  }
  kernels::matmul(*weights_.output, last_.data(), n_want, logits_.data(), threads_);
  softcap_logits(config_, logits_.data(), n_want * config_.vocab_size);
  return std::span<const float>(logits_.data(), static_cast<size_t>(n_want * config_.vocab_size));
}

void BatchEngine::layer(int64_t l, int64_t n) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
  norm_rows(c, *w.attn_norm, w.attn_norm_b, x_.data(), xb_.data(), n, threads_);
  linear_same_input({{w.wq, w.bq, q_.data()}, {w.wk, w.bk, k_.data()}, {w.wv, w.bv, v_.data()}}, xb_.data(), n,
                    threads_);  // q_ [n, q_dim], k_ and v_ [n, kv_dim]
  norm_qk_heads(c, w, q_.data(), k_.data(), n, threads_);
  write_kv(l, n);
  attention(l);                                              // attn_ [n, dim]
  linear(*w.wo, w.bo, attn_.data(), n, q_.data(), threads_);
  post_norm_rows(c, w.attn_post_norm, q_.data(), n, threads_);
  add_into_residual(q_.data(), n);
  norm_rows(c, *w.ffn_norm, w.ffn_norm_b, x_.data(), xb_.data(), n, threads_);
  feed_forward(c, w, xb_.data(), n, hb_.data(), hb2_.data(), q_.data(), threads_);  // [n, dim]
  post_norm_rows(c, w.ffn_post_norm, q_.data(), n, threads_);
  add_into_residual(q_.data(), n);
}

// Writes n floats at element `offset` of a pool row in the pool's dtype.
void BatchEngine::store_kv_row(const float* src, void* dst, int64_t offset, int64_t n) const {
  if (pool_.dtype() == DType::kF16) {
    kernels::f32_to_f16_row(src, static_cast<uint16_t*>(dst) + offset, n);
  } else {
    std::copy(src, src + n, static_cast<float*>(dst) + offset);
  }
}

void BatchEngine::write_kv(int64_t l, int64_t n) {
  for_rows(threads_, n, [&](int64_t i0, int64_t i1) { write_kv_rows(l, n, i0, i1); });
}

// Tokens [i0, i1) of the step's n: RoPE on their q and k, then their keys and values into
// the pool (each token its own position's rows).
void BatchEngine::write_kv_rows(int64_t l, int64_t n, int64_t i0, int64_t i1) {
  const ModelConfig& c = config_;
  const int64_t kv = c.kv_dim(), hd = c.head_dim(), bt = pool_.block_tokens();
  const bool interleaved = c.rope_layout == RopeLayout::kInterleaved;
  const float* angles = rope_.data() + (c.local_rope(l) ? n * hd : 0);  // the local layers' angles follow
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t pos = tok_pos_[static_cast<size_t>(i)];
    float* k = k_.data() + i * kv;
    if (c.positions == PositionKind::kRope) {  // rope_: [n, head_dim] cos|sin of each token's position
      const float* cos_sin = angles + i * hd;
      float* q = q_.data() + i * c.q_dim();
      for (int64_t h = 0; h < c.n_heads; ++h) kernels::rope_apply(q + h * hd, hd, cos_sin, interleaved);
      for (int64_t h = 0; h < c.n_kv_heads; ++h) kernels::rope_apply(k + h * hd, hd, cos_sin, interleaved);
    }
    const BlockTable& table = *seqs_[static_cast<size_t>(tok_seq_[static_cast<size_t>(i)])].blocks;
    const int32_t block = table.blocks[static_cast<size_t>(pos / bt)];
    const float* v = v_.data() + i * kv;
    for (int64_t h = 0; h < c.n_kv_heads; ++h) {  // head-major slabs (kv/block_pool.h)
      const int64_t off = (h * bt + pos % bt) * hd;
      store_kv_row(k + h * hd, pool_.keys(block, l), off, hd);
      store_kv_row(v + h * hd, pool_.values(block, l), off, hd);
    }
  }
}

// One task per (KV head, piece): a piece is a sequence's run of up to
// kPieceTokens consecutive tokens of this step. A decode token attends with the
// query heads sharing its KV head together (kernels::attend); a prefill run,
// head by head, with each 16-position chunk of keys and values read once for
// the run (kernels::attend_causal). With a prefill run in the step, tasks go
// head by head, so a thread's pieces of one prompt read the same head's keys and
// values (hot in its L2) rather than every head of the sequence (megabytes, from
// L3, once per token). A step of decode tokens only goes sequence by sequence:
// each sequence's cache is read once, from memory, and its heads share every
// position's cache lines (BM_AttendCold, 134M shape, AVX2: 1.6 against 3.1 us a
// head at 128 positions, 8.7 against 21.6 at 512).
void BatchEngine::attention(int64_t l) {
  const ModelConfig& c = config_;
  const int64_t hd = c.head_dim(), group = c.n_heads / c.n_kv_heads, dim = c.q_dim();  // q_, attn_ rows
  const int64_t n_pieces = static_cast<int64_t>(pieces_.size());
  const float scale = c.attention_scale(), softcap = c.attn_softcap;
  const bool by_sequence = std::all_of(pieces_.begin(), pieces_.end(), [](const Piece& p) { return p.n == 1; });
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t kvh = by_sequence ? task % c.n_kv_heads : task / n_pieces;
      const int64_t piece_index = by_sequence ? task / c.n_kv_heads : task % n_pieces;
      const Piece& piece = pieces_[static_cast<size_t>(piece_index)];
      const int64_t i = piece.first_token, pos = tok_pos_[static_cast<size_t>(i)];
      const BlockTable& table = *seqs_[static_cast<size_t>(tok_seq_[static_cast<size_t>(i)])].blocks;
      kernels::PagedKv kv;
      const int64_t head_bytes = kvh * pool_.block_tokens() * hd * pool_.elem_bytes();  // head-major slabs
      kv.keys = static_cast<const uint8_t*>(pool_.keys(0, l)) + head_bytes;
      kv.values = static_cast<const uint8_t*>(pool_.values(0, l)) + head_bytes;
      kv.dtype = pool_.dtype();
      kv.blocks = table.blocks.data();
      kv.block_stride = pool_.block_stride_elems();
      kv.block_tokens = pool_.block_tokens();
      kv.pos_stride = hd;
      const int64_t head0 = kvh * group;
      const float* slopes = alibi_.empty() ? nullptr : alibi_.data() + head0;
      if (softcap > 0.0f || window_start(c, l, pos + piece.n - 1) > 0) {
        // Soft-capping, or a window shorter than this piece's context: the
        // scalar kernel, token by token, over each token's window.
        for (int64_t j = 0; j < piece.n; ++j) {
          const int64_t row = (i + j) * dim + head0 * hd;
          kernels::attend_window_scalar(q_.data() + row, group, hd, kv, window_start(c, l, pos + j), pos + j + 1,
                                        scale, softcap, attn_.data() + row);
        }
        continue;
      }
      if (piece.n == 1) {
        kernels::attend(q_.data() + i * dim + head0 * hd, group, hd, kv, pos + 1, scale, slopes,
                        attn_.data() + i * dim + head0 * hd);
        continue;
      }
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = head0 + g;
        kernels::attend_causal(q_.data() + i * dim + h * hd, dim, piece.n, hd, kv, pos, scale,
                               slopes ? slopes + g : nullptr, attn_.data() + i * dim + h * hd, dim);
      }
    }
  };
  if (threads_) {
    threads_->parallel_for(n_pieces * c.n_kv_heads, 1, run);
  } else {
    run(0, n_pieces * c.n_kv_heads);
  }
}

void BatchEngine::add_into_residual(const float* delta, int64_t n) {
  const int64_t dim = config_.dim;
  for_rows(threads_, n, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0 * dim; i < r1 * dim; ++i) x_[static_cast<size_t>(i)] += delta[i];
  });
}

Status BatchEngine::warm_up() {
  // One full-size step: a long sequence plus one-token sequences up to the
  // step's limits, over blocks borrowed from the (still empty) pool and
  // returned at once. What it writes there is never read.
  const int64_t bt = pool_.block_tokens();
  const int64_t extra_seqs = std::min(sizes_.step_seqs, sizes_.step_tokens) - 1;
  BlockTable table;
  for (int64_t b = 0; b < blocks_for_tokens(sizes_.step_tokens - extra_seqs, bt); ++b) {
    std::optional<int32_t> block = pool_.allocate();
    if (!block) break;
    table.blocks.push_back(*block);
  }
  if (table.blocks.empty()) return make_error(ErrorCode::kInternal, "warm-up needs a free KV block");
  // The one-token sequences each at its own position of their own blocks (no
  // two threads write one row); as many as the pool has room for.
  BlockTable extra;
  for (int64_t b = 0; b < blocks_for_tokens(extra_seqs, bt); ++b) {
    std::optional<int32_t> block = pool_.allocate();
    if (!block) break;
    extra.blocks.push_back(*block);
  }
  const int64_t long_len = std::min(sizes_.step_tokens - extra_seqs, table.capacity_tokens(bt));
  std::vector<int32_t> tokens(static_cast<size_t>(long_len), 0);
  std::vector<SeqStep> seqs;
  seqs.push_back(SeqStep{tokens, 0, &table, true});
  for (int64_t s = 0; s < std::min(extra_seqs, extra.capacity_tokens(bt)); ++s) {
    seqs.push_back(SeqStep{std::span(tokens).first(1), s, &extra, true});
  }
  auto r = step(seqs);
  for (int32_t b : table.blocks) pool_.release(b);
  for (int32_t b : extra.blocks) pool_.release(b);
  if (!r.ok()) return r.error();
  // The step above sized the caller's buffers, but a worker's panel buffer only
  // for the chunks it happened to claim: size every thread's now.
  const int64_t cols = widest_matmul_cols(config_);
  auto reserve = [cols](int64_t, int64_t) { kernels::reserve_panel_scratch(cols); };
  if (threads_) {
    threads_->on_every_thread(reserve);
  } else {
    reserve(0, 1);
  }
  return {};
}

}  // namespace plimsoll
