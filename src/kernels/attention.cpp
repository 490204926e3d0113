// kernels::attend and attend_causal: the scalar twins, and the calls through the
// active ISA's table (isa_table.h).
#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/half.h"
#include "kernels/isa_table.h"
#include "kernels/kernels.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {
namespace {

inline float widen(float x) { return x; }
inline float widen(uint16_t h) { return f16_to_f32(h); }

// Positions [first_pos, n_pos); softcap > 0: score -> cap * tanh(score / cap) before the slope.
template <class T>
void attend_scalar_t(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t first_pos,
                     int64_t n_pos, float scale, float softcap, const float* slopes, float* out) {
  const T* keys = static_cast<const T*>(kv.keys);
  const T* values = static_cast<const T*>(kv.values);
  for (int64_t g = 0; g < group; ++g) {
    const float* qg = q + g * head_dim;
    float* acc = out + g * head_dim;
    std::fill(acc, acc + head_dim, 0.0f);
    float max_score = -std::numeric_limits<float>::infinity(), denom = 0.0f;
    for (int64_t p = first_pos; p < n_pos; ++p) {
      const int64_t off = kv.blocks[p / kv.block_tokens] * kv.block_stride + (p % kv.block_tokens) * kv.pos_stride;
      const T* k = keys + off;
      const T* v = values + off;
      float dot = 0.0f;
      for (int64_t d = 0; d < head_dim; ++d) dot += qg[d] * widen(k[d]);
      float s = dot * scale;
      if (softcap > 0.0f) s = softcap * std::tanh(s / softcap);
      s += slopes ? slopes[g] * static_cast<float>(p) : 0.0f;
      if (s > max_score) {
        const float rescale = std::exp(max_score - s);
        denom *= rescale;
        for (int64_t d = 0; d < head_dim; ++d) acc[d] *= rescale;
        max_score = s;
      }
      const float weight = std::exp(s - max_score);
      denom += weight;
      for (int64_t d = 0; d < head_dim; ++d) acc[d] += weight * widen(v[d]);
    }
    const float inv = denom > 0.0f ? 1.0f / denom : 0.0f;
    for (int64_t d = 0; d < head_dim; ++d) acc[d] *= inv;
  }
}

}  // namespace

void attend_scalar(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos,
                   float scale, const float* slopes, float* out) {
  if (kv.dtype == DType::kF16) return attend_scalar_t<uint16_t>(q, group, head_dim, kv, 0, n_pos, scale, 0.0f, slopes, out);
  attend_scalar_t<float>(q, group, head_dim, kv, 0, n_pos, scale, 0.0f, slopes, out);
}

void attend_window_scalar(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t first_pos,
                          int64_t n_pos, float scale, float softcap, float* out) {
  if (kv.dtype == DType::kF16) {
    return attend_scalar_t<uint16_t>(q, group, head_dim, kv, first_pos, n_pos, scale, softcap, nullptr, out);
  }
  attend_scalar_t<float>(q, group, head_dim, kv, first_pos, n_pos, scale, softcap, nullptr, out);
}

void attend_causal_scalar(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                          int64_t first_pos, float scale, const float* slope, float* out, int64_t out_stride) {
  for (int64_t i = 0; i < n_q; ++i) {
    attend_scalar(q + i * q_stride, 1, head_dim, kv, first_pos + i + 1, scale, slope, out + i * out_stride);
  }
}

void attend(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos, float scale,
            const float* slopes, float* out) {
  active_table().vec.attend(q, group, head_dim, kv, n_pos, scale, slopes, out);
}

void attend_causal(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                   int64_t first_pos, float scale, const float* slope, float* out, int64_t out_stride) {
  active_table().vec.attend_causal(q, q_stride, n_q, head_dim, kv, first_pos, scale, slope, out, out_stride);
}

}  // namespace plimsoll::kernels
