// The reference forward pass (norm, q/k/v with optional biases, qk-norm, RoPE or
// ALiBi, GQA attention with optional sliding window and soft-capping, SwiGLU,
// GeGLU or GELU, optional post norms), written to be read: one token, one layer at a time.
#include "model/decoder_reference.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"
#include "model/layer_ops.h"

namespace plimsoll {

ReferenceKvCache::ReferenceKvCache(const ModelConfig& config, int64_t max_seq)
    : max_seq_len(max_seq),
      kv_dim(config.kv_dim()),
      k(static_cast<size_t>(config.n_layers * max_seq * config.kv_dim())),
      v(static_cast<size_t>(config.n_layers * max_seq * config.kv_dim())) {}

DecoderReference::DecoderReference(const ModelConfig& config, DecoderWeights weights)
    : config_(config), weights_(std::move(weights)), alibi_(alibi_slopes(config)) {
  const auto n = [](int64_t v) { return static_cast<size_t>(v); };
  x_.resize(n(config.dim));
  xb_.resize(n(std::max(config.dim, config.q_dim())));  // normed rows [dim], attention output [q_dim]
  xb2_.resize(n(config.dim));
  q_.resize(n(config.q_dim()));
  k_.resize(n(config.kv_dim()));
  v_.resize(n(config.kv_dim()));
  hb_.resize(n(config.ffn_dim));
  hb2_.resize(n(config.ffn_dim));
}

void DecoderReference::attention(int64_t layer, int64_t pos, ReferenceKvCache& cache) {
  const int64_t head_dim = config_.head_dim();
  const int64_t group = config_.n_heads / config_.n_kv_heads;  // query heads per kv head
  const float scale = config_.attention_scale(), cap = config_.attn_softcap;
  const int64_t first = window_start(config_, layer, pos);  // sliding window: older positions are masked
  att_.resize(static_cast<size_t>(pos + 1));
  for (int64_t h = 0; h < config_.n_heads; ++h) {
    const float* q = q_.data() + h * head_dim;
    const int64_t kv_off = (h / group) * head_dim;
    const float slope = alibi_.empty() ? 0.0f : alibi_[static_cast<size_t>(h)];
    for (int64_t t = first; t <= pos; ++t) {
      float s = kernels::dot_f32(q, cache.k_at(layer, t) + kv_off, head_dim) * scale;
      if (cap > 0.0f) s = cap * std::tanh(s / cap);  // Gemma 2's attention soft-capping
      att_[static_cast<size_t>(t)] = s + slope * static_cast<float>(t);
    }
    kernels::softmax(att_.data() + first, pos + 1 - first);
    float* out = xb_.data() + h * head_dim;  // [head_dim]
    for (int64_t i = 0; i < head_dim; ++i) out[i] = 0.0f;
    for (int64_t t = first; t <= pos; ++t) {
      kernels::axpy_f32(out, att_[static_cast<size_t>(t)], cache.v_at(layer, t) + kv_off, head_dim);
    }
  }
}

void DecoderReference::forward(int32_t token, int64_t pos, ReferenceKvCache& cache, float* logits,
                               ThreadPool* pool) {
  const ModelConfig& c = config_;
  embed(c, weights_, token, pos, x_.data(), xb_.data());
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights& lw = weights_.layers[static_cast<size_t>(l)];
    // attention block: x += wo(attn(pos(wq xn + bq), pos(wk xn + bk), wv xn + bv)) + bo
    norm_rows(c, *lw.attn_norm, lw.attn_norm_b, x_.data(), xb_.data(), 1);
    linear(*lw.wq, lw.bq, xb_.data(), 1, q_.data(), pool);
    linear(*lw.wk, lw.bk, xb_.data(), 1, k_.data(), pool);
    linear(*lw.wv, lw.bv, xb_.data(), 1, v_.data(), pool);
    norm_qk_heads(c, lw, q_.data(), k_.data(), 1);
    rotate_qk(c, q_.data(), k_.data(), pos, l);
    std::copy(k_.begin(), k_.end(), cache.k_at(l, pos));
    std::copy(v_.begin(), v_.end(), cache.v_at(l, pos));
    attention(l, pos, cache);
    linear(*lw.wo, lw.bo, xb_.data(), 1, xb2_.data(), pool);
    post_norm_rows(c, lw.attn_post_norm, xb2_.data(), 1);
    for (int64_t i = 0; i < c.dim; ++i) x_[static_cast<size_t>(i)] += xb2_[static_cast<size_t>(i)];
    // feed-forward block: x += ffn(norm(x))
    norm_rows(c, *lw.ffn_norm, lw.ffn_norm_b, x_.data(), xb_.data(), 1);
    feed_forward(c, lw, xb_.data(), 1, hb_.data(), hb2_.data(), xb2_.data(), pool);
    post_norm_rows(c, lw.ffn_post_norm, xb2_.data(), 1);
    for (int64_t i = 0; i < c.dim; ++i) x_[static_cast<size_t>(i)] += xb2_[static_cast<size_t>(i)];
  }
  norm_rows(c, *weights_.output_norm, weights_.output_norm_b, x_.data(), x_.data(), 1);
  kernels::matmul(*weights_.output, x_.data(), 1, logits, pool);
  softcap_logits(c, logits, c.vocab_size);
}

}  // namespace plimsoll
