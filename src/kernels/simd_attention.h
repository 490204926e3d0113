// Attention's row-block kernel written once over a vector trait V (x86/avx2_vec.h,
// arm/neon_vec.h): up to kSimdAttendRows query rows over one KV head share each
// chunk's transposed keys and each value row. Included by each ISA's attention file,
// compiled with its flags (internal linkage). V's members used here: F, M, kLanes,
// kSpanChunks, zero, set1, broadcast, load, storeu, store, widen (f32 or f16 row ->
// F), add, sub, mul, max, fma, hsum, hmax, first, select, keep, lane_positions,
// transpose, score_rows and simd_exp's (simd_math.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/attention.h"
#include "kernels/attention_driver.h"
#include "kernels/paged_kv_rows.h"
#include "kernels/simd_math.h"

namespace plimsoll::kernels {
namespace {

inline constexpr int kSimdAttendRows = 8;  // query rows per block, decode and prefill

// Query rows q_r = q + r * q_stride (r < nr <= kSimdAttendRows) over the same KV head:
// row r sees positions [0, n_vis[r]) (n_vis[r] >= 1) with ALiBi slope slopes[r].
// Positions go a span of V::kSpanChunks chunks of V::kLanes at a time: each chunk's
// keys are transposed once to kt (lane j: position j) and scored against every row
// (V::score_rows); each row's online softmax updates once per span (one max, one
// rescale, the span's exps), and the span's values are loaded once per vector of
// dimensions for every row's sums. More chunks a span: fewer softmax updates, whose
// max and rescale every position's values wait on.
template <class V, class T, int nr>
void simd_attend_rows(const float* q, int64_t q_stride, int64_t hd, const PagedKv& kv, const int64_t* n_vis,
                      float scale, const float* slopes, float* out, int64_t out_stride) {
  using F = typename V::F;
  using M = typename V::M;
  constexpr int kChunk = V::kLanes, kSpanChunks = V::kSpanChunks, kSpan = kSpanChunks * kChunk;
  alignas(sizeof(F)) float acc[nr][kAttendMaxHeadDim];
  alignas(sizeof(F)) float kt[kAttendMaxHeadDim * kChunk];
  alignas(sizeof(F)) float w[nr][kSpan];
  float max_score[nr], denom[nr];
  int64_t n_pos = 0;
  for (int r = 0; r < nr; ++r) {
    std::fill(acc[r], acc[r] + hd, 0.0f);
    max_score[r] = -std::numeric_limits<float>::infinity();
    denom[r] = 0.0f;
    n_pos = std::max(n_pos, n_vis[r]);
  }
  const F lane_pos = V::lane_positions();
  const F neg_inf = V::set1(-std::numeric_limits<float>::infinity());
  for (int64_t p0 = 0; p0 < n_pos; p0 += kSpan) {
    const int n = static_cast<int>(std::min<int64_t>(kSpan, n_pos - p0));
    const T* k[kSpan];
    const T* v[kSpan];
    gather_kv_rows(kv, p0, n, k, v);
    for (int c = 0; c < kSpan; c += kChunk) {  // scores of chunk c into w[r][c .. c + kChunk)
      const int nc = std::clamp(n - c, 0, kChunk);
      if (nc == 0) {
        for (int r = 0; r < nr; ++r) V::store(w[r] + c, V::zero());
        continue;
      }
      prefetch_next_block<T>(kv, p0 + c, n_pos, hd);
      for (int64_t d0 = 0; d0 < hd; d0 += kChunk) {
        F t[kChunk];
        for (int j = 0; j < kChunk; ++j) t[j] = j < nc ? V::widen(k[c + j] + d0) : V::zero();
        V::transpose(t);
        for (int i = 0; i < kChunk; ++i) V::store(kt + (d0 + i) * kChunk, t[i]);
      }
      F s[nr];
      V::template score_rows<nr>(q, q_stride, kt, hd, s);
      // The scores leave the registers once, here: indexed by the softmax loop's r below,
      // s itself would live on the stack and GCC stored all nr sums every dimension.
      for (int r = 0; r < nr; ++r) V::store(w[r] + c, s[r]);
    }
    for (int r = 0; r < nr; ++r) {
      const int64_t live_n = std::min<int64_t>(n, n_vis[r] - p0);
      if (live_n <= 0) {  // the row's positions ended in an earlier span
        for (int h = 0; h < kSpanChunks; ++h) V::store(w[r] + h * kChunk, V::zero());
        continue;
      }
      F sr[kSpanChunks];
      M live[kSpanChunks];
      for (int h = 0; h < kSpanChunks; ++h) {
        live[h] = V::first(live_n - h * kChunk);
        sr[h] = V::mul(V::load(w[r] + h * kChunk), V::set1(scale));
        if (slopes[r] != 0.0f) {
          const F pos = V::add(lane_pos, V::set1(static_cast<float>(p0 + h * kChunk)));
          sr[h] = V::fma(pos, V::set1(slopes[r]), sr[h]);
        }
        sr[h] = V::select(live[h], sr[h], neg_inf);
      }
      F span_max_v = sr[0];
      for (int h = 1; h < kSpanChunks; ++h) span_max_v = V::max(span_max_v, sr[h]);
      const float span_max = V::hmax(span_max_v);
      if (span_max > max_score[r]) {
        const float rescale = std::exp(max_score[r] - span_max);
        denom[r] *= rescale;
        const F rv = V::set1(rescale);
        for (int64_t d = 0; d < hd; d += kChunk) V::store(acc[r] + d, V::mul(V::load(acc[r] + d), rv));
        max_score[r] = span_max;
      }
      const F m = V::set1(max_score[r]);
      F e_sum = V::zero();
      for (int h = 0; h < kSpanChunks; ++h) {
        // masked lanes: exp(-inf) = 0 (simd_exp clamps to -104: a subnormal), so mask again
        const F e = V::keep(simd_exp<V>(V::sub(sr[h], m)), live[h]);
        V::store(w[r] + h * kChunk, e);
        e_sum = h == 0 ? e : V::add(e_sum, e);
      }
      denom[r] += V::hsum(e_sum);
    }
    for (int64_t d = 0; d < hd; d += kChunk) {
      F a[nr];
      for (int r = 0; r < nr; ++r) a[r] = V::load(acc[r] + d);
      for (int j = 0; j < n; ++j) {
        const F vj = V::widen(v[j] + d);
        for (int r = 0; r < nr; ++r) a[r] = V::fma(V::broadcast(&w[r][j]), vj, a[r]);
      }
      for (int r = 0; r < nr; ++r) V::store(acc[r] + d, a[r]);
    }
  }
  for (int r = 0; r < nr; ++r) {
    const F inv = V::set1(denom[r] > 0.0f ? 1.0f / denom[r] : 0.0f);
    for (int64_t d = 0; d < hd; d += kChunk) V::storeu(out + r * out_stride + d, V::mul(V::load(acc[r] + d), inv));
  }
}

// The kernels attention_driver.h asks for, for levels whose every block runs
// simd_attend_rows (a level with a one-row kernel adds kMinSharedRows and row).
template <class V>
struct SimdAttention {
  static constexpr int kLanes = V::kLanes;
  static constexpr int kDecodeRows = kSimdAttendRows;
  static constexpr int kCausalRows = kSimdAttendRows;
  static constexpr int64_t kMinSharedRows = 1;
  template <class T, int nr>
  static void rows(const float* q, int64_t q_stride, int64_t hd, const PagedKv& kv, const int64_t* n_vis, float scale,
                   const float* slopes, float* out, int64_t out_stride) {
    simd_attend_rows<V, T, nr>(q, q_stride, hd, kv, n_vis, scale, slopes, out, out_stride);
  }
};

}  // namespace
}  // namespace plimsoll::kernels
