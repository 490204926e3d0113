// Norms, biased projections, embeddings, RoPE, feed-forward and ALiBi slopes
// for every architecture, on top of the f32 kernels.
#include "model/layer_ops.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "kernels/kernels.h"

namespace plimsoll {

void norm_rows(const ModelConfig& c, const TensorView& weight, const TensorView* bias,
               const float* x, float* out, int64_t rows, ThreadPool* pool) {
  for_rows(pool, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      if (c.norm == NormKind::kLayer) {
        kernels::layernorm(out + r * c.dim, x + r * c.dim, weight.f32(), bias ? bias->f32() : nullptr,
                           c.dim, c.norm_eps);
      } else {
        kernels::rmsnorm(out + r * c.dim, x + r * c.dim, weight.f32(), c.dim, c.norm_eps);
      }
    }
  });
}

void linear(const TensorView& w, const TensorView* bias, const float* x, int64_t rows, float* y,
            ThreadPool* pool) {
  kernels::matmul(w, x, rows, y, pool);
  if (bias) kernels::add_bias(y, bias->f32(), rows, w.rows());
}

void linear_same_input(std::initializer_list<LinearOut> outs, const float* x, int64_t rows, ThreadPool* pool) {
  constexpr size_t kMax = 4;  // Q, K, V at most
  assert(outs.size() <= kMax);
  kernels::MatmulOut mm[kMax] = {};
  size_t n = 0;
  for (const LinearOut& o : outs) mm[n++] = {o.w, o.y};
  kernels::matmul_same_input(mm, static_cast<int>(n), x, rows, pool);
  for (const LinearOut& o : outs) {
    if (o.bias) kernels::add_bias(o.y, o.bias->f32(), rows, o.w->rows());
  }
}

void embed(const ModelConfig& c, const DecoderWeights& w, int32_t token, int64_t pos, float* x,
           float* scratch) {
  kernels::dequantize_row(w.token_embd->dtype, w.token_embd->row(token), x, c.dim);
  if (c.embed_scale) {
    const float scale = std::sqrt(static_cast<float>(c.dim));
    for (int64_t i = 0; i < c.dim; ++i) x[i] *= scale;
  }
  if (w.position_embd) {
    kernels::dequantize_row(w.position_embd->dtype, w.position_embd->row(pos), scratch, c.dim);
    for (int64_t i = 0; i < c.dim; ++i) x[i] += scratch[i];
  }
  if (w.embd_norm) {
    kernels::layernorm(x, x, w.embd_norm->f32(), w.embd_norm_b ? w.embd_norm_b->f32() : nullptr,
                       c.dim, c.norm_eps);
  }
}

void rope_angles(const ModelConfig& c, int64_t pos, float* cos_sin, bool local) {
  const int64_t hd = c.head_dim(), half = hd / 2;
  if (local && c.rope_theta_local > 0.0f) {
    kernels::rope_angles(hd, pos, c.rope_theta_local, cos_sin);
    return;
  }
  if (c.rope_freq_factors.empty() && c.rope_freq_scale == 1.0f) {
    kernels::rope_angles(hd, pos, c.rope_theta, cos_sin);
    return;
  }
  // In double, as kernels::rope_angles: pos * freq reaches 1e5 rad.
  const double scaled_pos = static_cast<double>(pos) * static_cast<double>(c.rope_freq_scale);
  for (int64_t i = 0; i < half; ++i) {
    double freq = std::pow(static_cast<double>(c.rope_theta), -2.0 * static_cast<double>(i) / static_cast<double>(hd));
    if (!c.rope_freq_factors.empty()) freq /= static_cast<double>(c.rope_freq_factors[static_cast<size_t>(i)]);
    const double angle = scaled_pos * freq;
    cos_sin[i] = static_cast<float>(std::cos(angle));
    cos_sin[half + i] = static_cast<float>(std::sin(angle));
  }
}

void norm_qk_heads(const ModelConfig& c, const LayerWeights& lw, float* q, float* k, int64_t rows,
                   ThreadPool* pool) {
  if (!c.qk_norm) return;
  const int64_t hd = c.head_dim();
  for_rows(pool, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t h = r0 * c.n_heads; h < r1 * c.n_heads; ++h) {
      kernels::rmsnorm(q + h * hd, q + h * hd, lw.q_norm->f32(), hd, c.norm_eps);
    }
    for (int64_t h = r0 * c.n_kv_heads; h < r1 * c.n_kv_heads; ++h) {
      kernels::rmsnorm(k + h * hd, k + h * hd, lw.k_norm->f32(), hd, c.norm_eps);
    }
  });
}

void rotate_qk(const ModelConfig& c, float* q, float* k, int64_t pos, int64_t layer) {
  if (c.positions != PositionKind::kRope) return;
  const int64_t hd = c.head_dim();
  const bool interleaved = c.rope_layout == RopeLayout::kInterleaved;
  thread_local std::vector<float> cos_sin;  // [hd]: this position's angles, for every head
  cos_sin.resize(static_cast<size_t>(hd));
  rope_angles(c, pos, cos_sin.data(), c.local_rope(layer));
  for (int64_t h = 0; h < c.n_heads; ++h) kernels::rope_apply(q + h * hd, hd, cos_sin.data(), interleaved);
  for (int64_t h = 0; h < c.n_kv_heads; ++h) kernels::rope_apply(k + h * hd, hd, cos_sin.data(), interleaved);
}

void post_norm_rows(const ModelConfig& c, const TensorView* weight, float* rows_data, int64_t rows,
                    ThreadPool* pool) {
  if (!weight) return;
  for_rows(pool, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      kernels::rmsnorm(rows_data + r * c.dim, rows_data + r * c.dim, weight->f32(), c.dim, c.norm_eps);
    }
  });
}

void softcap_logits(const ModelConfig& c, float* logits, int64_t n) {
  if (c.final_softcap <= 0.0f) return;
  const float cap = c.final_softcap;
  for (int64_t i = 0; i < n; ++i) logits[i] = cap * std::tanh(logits[i] / cap);
}

void feed_forward(const ModelConfig& c, const LayerWeights& lw, const float* xn, int64_t rows,
                  float* h, float* h2, float* out, ThreadPool* pool) {
  const int64_t f = c.ffn_dim;
  if (c.ffn == FfnKind::kSwiGlu) {
    linear_same_input({{lw.w_gate, lw.b_gate, h}, {lw.w_up, lw.b_up, h2}}, xn, rows, pool);  // [rows, ffn] each
    for_rows(pool, rows, [&](int64_t r0, int64_t r1) { kernels::swiglu(h + r0 * f, h + r0 * f, h2 + r0 * f, (r1 - r0) * f); });
  } else if (c.ffn == FfnKind::kGeGlu) {
    linear_same_input({{lw.w_gate, lw.b_gate, h}, {lw.w_up, lw.b_up, h2}}, xn, rows, pool);  // [rows, ffn] each
    for_rows(pool, rows, [&](int64_t r0, int64_t r1) {
      kernels::gelu_tanh(h + r0 * f, (r1 - r0) * f);
      for (int64_t i = r0 * f; i < r1 * f; ++i) h[i] *= h2[i];
    });
  } else {
    linear(*lw.w_up, lw.b_up, xn, rows, h, pool);
    for_rows(pool, rows, [&](int64_t r0, int64_t r1) { kernels::gelu_tanh(h + r0 * f, (r1 - r0) * f); });
  }
  linear(*lw.w_down, lw.b_down, h, rows, out, pool);  // [rows, dim]
}

std::vector<float> alibi_slopes(const ModelConfig& c) {
  if (c.positions != PositionKind::kAlibi) return {};
  const int64_t n = c.n_heads;
  int64_t closest = 1;  // the largest power of two <= n
  while (closest * 2 <= n) closest *= 2;
  const double base = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(closest)) - 3)));
  std::vector<float> slopes;
  for (int64_t i = 1; i <= closest; ++i) slopes.push_back(static_cast<float>(std::pow(base, i)));
  if (closest != n) {
    const double extra =
        std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(2 * closest)) - 3)));
    const int64_t remaining = std::min(closest, n - closest);
    for (int64_t i = 1; i < 1 + 2 * remaining; i += 2) {
      slopes.push_back(static_cast<float>(std::pow(extra, i)));
    }
  }
  return slopes;
}

}  // namespace plimsoll
