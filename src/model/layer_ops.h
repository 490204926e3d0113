// The per-architecture switches of a decoder layer as small functions shared
// by the reference forward and the batched engine, so both compute the same.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/model_config.h"
#include "core/thread_pool.h"
#include "model/decoder_weights.h"

namespace plimsoll {

// Row-wise steps (norms, RoPE and the KV write, residual adds, the FFN's activation) split
// their rows across the pool from this many rows on (a prefill): below, the pool's wake-up
// costs more than the rows (a decode step). Each row is computed alone either way, so the
// split changes no result.
inline constexpr int64_t kParallelRows = 32;
inline constexpr int64_t kRowGrain = 8;

// fn(r0, r1) over ranges covering [0, rows): on the pool when rows >= kParallelRows and
// pool has workers, else one call fn(0, rows) on the caller's thread.
template <typename F>
void for_rows(ThreadPool* pool, int64_t rows, F&& fn) {
  if (pool != nullptr && pool->n_threads() > 1 && rows >= kParallelRows) {
    pool->parallel_for(rows, kRowGrain, fn);
  } else {
    fn(int64_t{0}, rows);
  }
}

// out[r] = norm(x[r]) for r < rows; x, out: [rows, dim] (may alias). RMSNorm or
// LayerNorm as the config says; bias may be null. Rows split across pool (for_rows).
void norm_rows(const ModelConfig& c, const TensorView& weight, const TensorView* bias,
               const float* x, float* out, int64_t rows, ThreadPool* pool = nullptr);

// y = x w^T (+ bias): x [rows, w.cols()], y [rows, w.rows()]; bias may be null.
void linear(const TensorView& w, const TensorView* bias, const float* x, int64_t rows, float* y,
            ThreadPool* pool);
// linear for weights that read the same x (a layer's Q, K and V; gate and up): each
// y = x w^T (+ bias), x prepared once where the weights' kernels allow
// (kernels::matmul_same_input).
struct LinearOut {
  const TensorView* w;
  const TensorView* bias;
  float* y;
};
void linear_same_input(std::initializer_list<LinearOut> outs, const float* x, int64_t rows, ThreadPool* pool);

// The input row of `token` at `pos`: token embedding (x sqrt(dim) for Gemma)
// (+ learned position embedding) (+ embedding LayerNorm). x: [dim]; scratch: [dim].
void embed(const ModelConfig& c, const DecoderWeights& w, int32_t token, int64_t pos, float* x,
           float* scratch);

// The rotary angles of `pos`: cos_sin [hd] = cos of each pair's angle, then
// sin, with the config's frequency scaling (rope_freq_factors, rope_freq_scale);
// `local`: a local layer's angles of rope_theta_local, unscaled (Gemma 3).
void rope_angles(const ModelConfig& c, int64_t pos, float* cos_sin, bool local = false);

// RoPE on every head of one token's q [n_heads * hd] and k [n_kv_heads * hd]
// as layer `layer` rotates them; nothing for other position kinds.
void rotate_qk(const ModelConfig& c, float* q, float* k, int64_t pos, int64_t layer);

// Gemma's post norms: RMSNorm of rows [rows, dim] in place with `weight`
// (attn_post_norm / ffn_post_norm); nothing when weight is null. Rows split across pool.
void post_norm_rows(const ModelConfig& c, const TensorView* weight, float* rows_data, int64_t rows,
                    ThreadPool* pool = nullptr);

// Final logit soft-capping (Gemma 2): logits [n] -> cap * tanh(logits / cap);
// nothing unless config.final_softcap > 0.
void softcap_logits(const ModelConfig& c, float* logits, int64_t n);

// The first position a query at `pos` of `layer` attends to (sliding window);
// 0 for a full-attention layer.
inline int64_t window_start(const ModelConfig& c, int64_t layer, int64_t pos) {
  const int64_t w = c.window_of(layer);
  return w > 0 && pos + 1 > w ? pos + 1 - w : 0;
}

// qk-norm (Qwen3): RMSNorm of every head of q [rows, n_heads * hd] and k
// [rows, n_kv_heads * hd] with the layer's q_norm / k_norm [hd], in place;
// nothing unless config.qk_norm. Rows split across pool.
void norm_qk_heads(const ModelConfig& c, const LayerWeights& lw, float* q, float* k, int64_t rows,
                   ThreadPool* pool = nullptr);

// The feed-forward block of `rows` normed rows xn [rows, dim] -> out [rows, dim];
// h, h2: [rows, ffn] scratch (h2 unused for GELU). SwiGLU, GeGLU or GELU; the matmuls
// and the activation's rows run on pool.
void feed_forward(const ModelConfig& c, const LayerWeights& lw, const float* xn, int64_t rows,
                  float* h, float* h2, float* out, ThreadPool* pool);

// ALiBi slopes per head as BLOOM's build_alibi_tensor computes them (empty
// unless positions are ALiBi): score(query, key j) += slope[head] * j.
std::vector<float> alibi_slopes(const ModelConfig& c);

}  // namespace plimsoll
