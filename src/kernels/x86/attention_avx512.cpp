// AVX-512 attention over a paged KV cache: 16 positions at a time per query
// head (scores, one max, one vector exp), values accumulated in zmm-sized rows.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/attention.h"
#include "kernels/matmul_impl.h"
#include "kernels/x86/vec_math_avx512.h"

namespace plimsoll::kernels {
namespace {

constexpr int kChunk = 16;       // positions per softmax update
constexpr int64_t kMaxHeadDim = 512;

inline float dot16n(const float* a, const float* b, int64_t n) {  // n: a multiple of 16
  __m512 acc = _mm512_mul_ps(_mm512_loadu_ps(a), _mm512_loadu_ps(b));
  for (int64_t d = 16; d < n; d += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + d), _mm512_loadu_ps(b + d), acc);
  return _mm512_reduce_add_ps(acc);
}

inline void scale_row(float* acc, float s, int64_t n) {
  const __m512 sv = _mm512_set1_ps(s);
  for (int64_t d = 0; d < n; d += 16) _mm512_store_ps(acc + d, _mm512_mul_ps(_mm512_load_ps(acc + d), sv));
}

// One query head over all positions.
void attend_head(const float* q, int64_t hd, const PagedKv& kv, int64_t n_pos, float scale, float slope,
                 float* out) {
  alignas(64) float acc[kMaxHeadDim];
  alignas(64) float w[kChunk];
  std::fill(acc, acc + hd, 0.0f);
  float max_score = -std::numeric_limits<float>::infinity(), denom = 0.0f;
  for (int64_t p0 = 0; p0 < n_pos; p0 += kChunk) {
    const int n = static_cast<int>(std::min<int64_t>(kChunk, n_pos - p0));
    const float* k[kChunk];
    const float* v[kChunk];
    for (int j = 0; j < n; ++j) {
      const int64_t p = p0 + j;
      const int64_t off = kv.blocks[p / kv.block_tokens] * kv.block_stride + (p % kv.block_tokens) * kv.pos_stride;
      k[j] = kv.keys + off;
      v[j] = kv.values + off;
    }
    for (int j = 0; j < n; ++j) w[j] = dot16n(q, k[j], hd);
    const __mmask16 live = static_cast<__mmask16>((1u << n) - 1);
    const __m512 pos = _mm512_add_ps(_mm512_set1_ps(static_cast<float>(p0)),
                                     _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    __m512 s = _mm512_fmadd_ps(_mm512_maskz_load_ps(live, w), _mm512_set1_ps(scale),
                               _mm512_mul_ps(_mm512_set1_ps(slope), pos));
    s = _mm512_mask_blend_ps(live, _mm512_set1_ps(-std::numeric_limits<float>::infinity()), s);
    const float chunk_max = _mm512_reduce_max_ps(s);
    if (chunk_max > max_score) {
      const float rescale = std::exp(max_score - chunk_max);
      denom *= rescale;
      scale_row(acc, rescale, hd);
      max_score = chunk_max;
    }
    const __m512 e = _mm512_maskz_mov_ps(live, exp512(_mm512_sub_ps(s, _mm512_set1_ps(max_score))));
    denom += _mm512_reduce_add_ps(e);
    _mm512_store_ps(w, e);
    for (int64_t d = 0; d < hd; d += 16) {
      __m512 a = _mm512_load_ps(acc + d);
      for (int j = 0; j < n; ++j) a = _mm512_fmadd_ps(_mm512_set1_ps(w[j]), _mm512_loadu_ps(v[j] + d), a);
      _mm512_store_ps(acc + d, a);
    }
  }
  const float inv = denom > 0.0f ? 1.0f / denom : 0.0f;
  const __m512 iv = _mm512_set1_ps(inv);
  for (int64_t d = 0; d < hd; d += 16) _mm512_storeu_ps(out + d, _mm512_mul_ps(_mm512_load_ps(acc + d), iv));
}

}  // namespace

void avx512_attend(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos, float scale,
                   const float* slopes, float* out) {
  for (int64_t g = 0; g < group; ++g) {
    attend_head(q + g * head_dim, head_dim, kv, n_pos, scale, slopes ? slopes[g] : 0.0f, out + g * head_dim);
  }
}

}  // namespace plimsoll::kernels
