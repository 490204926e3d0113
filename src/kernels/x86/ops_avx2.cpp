// AVX2 + FMA + F16C twins of the f32 vector ops (dot_f32, axpy_f32, swiglu,
// sum_exp, f32_to_f16_row) and of attention (attend, attend_causal), for CPUs
// without AVX-512 (built with those flags only; chosen through the ISA table): the
// shared drivers (simd_ops.h, simd_attention.h) over the AVX2 vector trait, plus a
// one-row attention kernel for decode heads without grouped-query sharing.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/attention.h"
#include "kernels/attention_driver.h"
#include "kernels/matmul_impl.h"
#include "kernels/paged_kv_rows.h"
#include "kernels/simd_attention.h"
#include "kernels/simd_ops.h"
#include "kernels/x86/avx2_vec.h"

namespace plimsoll::kernels {
namespace {

using V = Avx2Vec;
constexpr int kChunk = V::kLanes;  // positions per score vector

// One query row (a decode head without grouped-query sharing), kRowSpan positions at a
// time in three passes: the span's scores (8 positions at a time, each its own dot
// accumulator, q loaded once per 8 dimensions, the 8 sums reduced into one vector), then
// its maximum and exps in place, then its values summed with the weights broadcast into
// accumulators that stay in registers (64 dimensions at a time). The online softmax meets
// only the spans (one rescale per span at most), so no position waits on the one before:
// updated per chunk of 8, every chunk's values waited on its max, branch and exps
// (docs/benchmarks.md). Transposing the keys costs more than it saves for one row.
constexpr int kRowSpan = 128;
constexpr int kSliceVecs = 8;  // value accumulators: 64 dimensions

// acc[0 .. 8 nv) += sum over j < n of w[j] * v[j][0 .. 8 nv)
template <int NV, class T>
inline void add_weighted_values(const T* const* v, const float* w, int n, int64_t d0, float* acc) {
  __m256 a[NV];
  for (int i = 0; i < NV; ++i) a[i] = _mm256_load_ps(acc + 8 * i);
  for (int j = 0; j < n; ++j) {
    const __m256 wj = _mm256_broadcast_ss(w + j);
    for (int i = 0; i < NV; ++i) a[i] = _mm256_fmadd_ps(wj, V::widen(v[j] + d0 + 8 * i), a[i]);
  }
  for (int i = 0; i < NV; ++i) _mm256_store_ps(acc + 8 * i, a[i]);
}

template <class T>
void attend_row(const float* q, int64_t hd, const PagedKv& kv, int64_t n_pos, float scale, float slope,
                float* out) {
  alignas(32) float acc[kAttendMaxHeadDim];
  alignas(32) float w[kRowSpan];  // the span's scores, then its weights
  const T* k[kRowSpan + kChunk];
  const T* v[kRowSpan + kChunk];
  std::fill(acc, acc + hd, 0.0f);
  float max_score = -std::numeric_limits<float>::infinity(), denom = 0.0f;
  const __m256 lane_pos = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256 scale_v = _mm256_set1_ps(scale);
  for (int64_t s0 = 0; s0 < n_pos; s0 += kRowSpan) {
    const int ns = static_cast<int>(std::min<int64_t>(kRowSpan, n_pos - s0));
    __m256 span_max = neg_inf;
    for (int c = 0; c < ns; c += kChunk) {  // scores; positions past the span's end: key c again, masked
      const int n = std::min(kChunk, ns - c);
      prefetch_next_block<T>(kv, s0 + c, n_pos, hd);
      gather_kv_rows(kv, s0 + c, n, k + c, v + c);
      for (int j = n; j < kChunk; ++j) k[c + j] = k[c];
      __m256 p[kChunk];
      for (int j = 0; j < kChunk; ++j) p[j] = _mm256_setzero_ps();
      for (int64_t d0 = 0; d0 < hd; d0 += 8) {
        const __m256 qd = _mm256_loadu_ps(q + d0);
        for (int j = 0; j < kChunk; ++j) p[j] = _mm256_fmadd_ps(qd, V::widen(k[c + j] + d0), p[j]);
      }
      __m256 sr = _mm256_mul_ps(reduce8(p), scale_v);
      if (slope != 0.0f) {
        sr = _mm256_fmadd_ps(_mm256_add_ps(lane_pos, _mm256_set1_ps(static_cast<float>(s0 + c))), _mm256_set1_ps(slope), sr);
      }
      sr = _mm256_blendv_ps(neg_inf, sr, _mm256_castsi256_ps(V::first(n)));
      _mm256_store_ps(w + c, sr);
      span_max = _mm256_max_ps(span_max, sr);
    }
    const float m = hmax(span_max);
    if (m > max_score) {
      const float rescale = std::exp(max_score - m);
      denom *= rescale;
      const __m256 rv = _mm256_set1_ps(rescale);
      for (int64_t d = 0; d < hd; d += 8) _mm256_store_ps(acc + d, _mm256_mul_ps(_mm256_load_ps(acc + d), rv));
      max_score = m;
    }
    const __m256 mv = _mm256_set1_ps(max_score);
    __m256 sum = _mm256_setzero_ps();
    for (int c = 0; c < ns; c += kChunk) {
      // past the span's end: exp(-inf) = 0 (simd_exp clamps to -104: a subnormal), so mask
      const __m256 e = _mm256_and_ps(simd_exp<V>(_mm256_sub_ps(_mm256_load_ps(w + c), mv)),
                                     _mm256_castsi256_ps(V::first(ns - c)));
      _mm256_store_ps(w + c, e);
      sum = _mm256_add_ps(sum, e);
    }
    denom += hsum(sum);
    for (int64_t d0 = 0; d0 < hd; d0 += 8 * kSliceVecs) {
      switch (std::min<int64_t>(kSliceVecs, (hd - d0) / 8)) {
        case 1: add_weighted_values<1>(v, w, ns, d0, acc + d0); break;
        case 2: add_weighted_values<2>(v, w, ns, d0, acc + d0); break;
        case 3: add_weighted_values<3>(v, w, ns, d0, acc + d0); break;
        case 4: add_weighted_values<4>(v, w, ns, d0, acc + d0); break;
        case 5: add_weighted_values<5>(v, w, ns, d0, acc + d0); break;
        case 6: add_weighted_values<6>(v, w, ns, d0, acc + d0); break;
        case 7: add_weighted_values<7>(v, w, ns, d0, acc + d0); break;
        default: add_weighted_values<kSliceVecs>(v, w, ns, d0, acc + d0); break;
      }
    }
  }
  const __m256 inv = _mm256_set1_ps(denom > 0.0f ? 1.0f / denom : 0.0f);
  for (int64_t d = 0; d < hd; d += 8) _mm256_storeu_ps(out + d, _mm256_mul_ps(_mm256_load_ps(acc + d), inv));
}

// simd_attend_rows' blocks, and the one-row kernel above for fewer than kMinSharedRows heads
// per KV head: a chunk's key transpose costs about three rows' dots (kernels_bench BM_Attend).
struct Avx2Attention : SimdAttention<V> {
  static constexpr int64_t kMinSharedRows = 4;
  template <class T>
  static void row(const float* q, int64_t hd, const PagedKv& kv, int64_t n_pos, float scale, float slope, float* out) {
    attend_row<T>(q, hd, kv, n_pos, scale, slope, out);
  }
};

}  // namespace

const VecKernels& avx2_vec_kernels() {
  static constexpr VecKernels k = simd_vec_kernels<V>(attend_with<Avx2Attention>, attend_causal_with<Avx2Attention>);
  return k;
}

}  // namespace plimsoll::kernels
