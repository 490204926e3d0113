// AVX2 + FMA + F16C twins of the f32 vector ops (dot_f32, axpy_f32, swiglu,
// sum_exp, f32_to_f16_row) and of attention (attend, attend_causal), for CPUs
// without AVX-512 (built with those flags only; chosen through the ISA table).
// exp is the AVX-512 path's polynomial (vec_math_avx512.h), with 2^n applied as
// two exponent-field multiplications instead of scalef.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/attention.h"
#include "kernels/paged_kv_rows.h"
#include "kernels/matmul_impl.h"
#include "kernels/x86/ymm_common.h"

namespace plimsoll::kernels {
namespace {

// Lanes i < n set (n in 0..8), for masked loads and stores of a row's tail.
inline __m256i tail_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// 2^n for integer-valued n in [-75, 64] (a normal float).
inline __m256 pow2(__m256i n) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23)); }

// exp(x) lane-wise, as exp512: x = n ln2 + r, degree-6 polynomial for e^r, times
// 2^n (split in two factors so that subnormal results stay exact). ~2 ulp;
// clamped to [-104, 88.72].
inline __m256 exp256(__m256 x) {
  x = _mm256_min_ps(x, _mm256_set1_ps(88.72f));
  x = _mm256_max_ps(x, _mm256_set1_ps(-104.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2(n1)), pow2(_mm256_sub_epi32(ni, n1)));
}

// ---- attention -------------------------------------------------------------------
constexpr int kChunk = 8;  // positions per softmax update
constexpr int64_t kMaxHeadDim = 512;

inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

constexpr int kBlockRows = 8;  // query rows that share each chunk's keys and values
// Fewer query rows per KV head than this run one at a time (attend_row): a
// chunk's key transpose costs about three rows' dots (kernels_bench BM_Attend).
constexpr int64_t kMinSharedRows = 4;

// Query rows q_r = q + r * q_stride (r < nr <= kBlockRows) over the same KV head:
// row r sees positions [0, n_vis[r]) (n_vis[r] >= 1) with ALiBi slope slopes[r].
// Positions go kSpan at a time, two chunks of 8: each chunk's keys are transposed
// once to kt (lane j: position j) and scored against every row by broadcast FMAs;
// each row's online softmax updates once per span (one max, one rescale, two
// vectors of exps), and the span's values are loaded once per 8 dimensions for
// every row's sums. (One update per chunk of 8 ran at 26 GMAC/s against 28.5:
// BM_AttendCausal avx2, head size 64, Zen 4; docs/benchmarks.md.)
constexpr int kSpan = 2 * kChunk;

template <class T, int nr>
void attend_rows(const float* q, int64_t q_stride, int64_t hd, const PagedKv& kv, const int64_t* n_vis,
                 float scale, const float* slopes, float* out, int64_t out_stride) {
  alignas(32) float acc[kBlockRows][kMaxHeadDim];
  alignas(32) float kt[kMaxHeadDim * kChunk];
  alignas(32) float w[kBlockRows][kSpan];
  float max_score[kBlockRows], denom[kBlockRows];
  int64_t n_pos = 0;
  for (int r = 0; r < nr; ++r) {
    std::fill(acc[r], acc[r] + hd, 0.0f);
    max_score[r] = -std::numeric_limits<float>::infinity();
    denom[r] = 0.0f;
    n_pos = std::max(n_pos, n_vis[r]);
  }
  const __m256 lane_pos = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t p0 = 0; p0 < n_pos; p0 += kSpan) {
    const int n = static_cast<int>(std::min<int64_t>(kSpan, n_pos - p0));
    const T* k[kSpan];
    const T* v[kSpan];
    gather_kv_rows(kv, p0, n, k, v);
    for (int c = 0; c < kSpan; c += kChunk) {  // scores of chunk c into w[r][c..c+7]
      const int nc = std::clamp(n - c, 0, kChunk);
      if (nc == 0) {
        for (int r = 0; r < nr; ++r) _mm256_store_ps(w[r] + c, _mm256_setzero_ps());
        continue;
      }
      prefetch_next_block<T>(kv, p0 + c, n_pos, hd);
      for (int64_t d0 = 0; d0 < hd; d0 += 8) {
        __m256 t[8];
        for (int j = 0; j < kChunk; ++j) t[j] = j < nc ? load8(k[c + j] + d0) : _mm256_setzero_ps();
        transpose8(t);
        for (int i = 0; i < 8; ++i) _mm256_store_ps(kt + (d0 + i) * kChunk, t[i]);
      }
      __m256 s[nr];
      for (int r = 0; r < nr; ++r) s[r] = _mm256_setzero_ps();
      for (int64_t d = 0; d < hd; ++d) {
        const __m256 kd = _mm256_load_ps(kt + d * kChunk);
        for (int r = 0; r < nr; ++r) s[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(q + r * q_stride + d), kd, s[r]);
      }
      // The scores leave the registers once, here: indexed by the softmax loop's r below,
      // s itself would live on the stack and GCC stored all nr sums every dimension.
      for (int r = 0; r < nr; ++r) _mm256_store_ps(w[r] + c, s[r]);
    }
    for (int r = 0; r < nr; ++r) {
      const int64_t live_n = std::min<int64_t>(n, n_vis[r] - p0);
      if (live_n <= 0) {  // the row's positions ended in an earlier span
        _mm256_store_ps(w[r], _mm256_setzero_ps());
        _mm256_store_ps(w[r] + kChunk, _mm256_setzero_ps());
        continue;
      }
      __m256 sr[2], live[2];
      for (int h = 0; h < 2; ++h) {
        live[h] = _mm256_castsi256_ps(tail_mask(live_n - h * kChunk));
        sr[h] = _mm256_mul_ps(_mm256_load_ps(w[r] + h * kChunk), _mm256_set1_ps(scale));
        if (slopes[r] != 0.0f) {
          const __m256 pos = _mm256_add_ps(lane_pos, _mm256_set1_ps(static_cast<float>(p0 + h * kChunk)));
          sr[h] = _mm256_fmadd_ps(pos, _mm256_set1_ps(slopes[r]), sr[h]);
        }
        sr[h] = _mm256_blendv_ps(neg_inf, sr[h], live[h]);
      }
      const float span_max = hmax(_mm256_max_ps(sr[0], sr[1]));
      if (span_max > max_score[r]) {
        const float rescale = std::exp(max_score[r] - span_max);
        denom[r] *= rescale;
        const __m256 rv = _mm256_set1_ps(rescale);
        for (int64_t d = 0; d < hd; d += 8) _mm256_store_ps(acc[r] + d, _mm256_mul_ps(_mm256_load_ps(acc[r] + d), rv));
        max_score[r] = span_max;
      }
      const __m256 m = _mm256_set1_ps(max_score[r]);
      __m256 e[2];
      for (int h = 0; h < 2; ++h) {
        // masked lanes: exp(-inf) = 0 (exp256 clamps to -104: a subnormal), so mask again
        e[h] = _mm256_and_ps(exp256(_mm256_sub_ps(sr[h], m)), live[h]);
        _mm256_store_ps(w[r] + h * kChunk, e[h]);
      }
      denom[r] += hsum(_mm256_add_ps(e[0], e[1]));
    }
    for (int64_t d = 0; d < hd; d += 8) {
      __m256 a[nr];
      for (int r = 0; r < nr; ++r) a[r] = _mm256_load_ps(acc[r] + d);
      for (int j = 0; j < n; ++j) {
        const __m256 vj = load8(v[j] + d);
        for (int r = 0; r < nr; ++r) a[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(&w[r][j]), vj, a[r]);
      }
      for (int r = 0; r < nr; ++r) _mm256_store_ps(acc[r] + d, a[r]);
    }
  }
  for (int r = 0; r < nr; ++r) {
    const __m256 inv = _mm256_set1_ps(denom[r] > 0.0f ? 1.0f / denom[r] : 0.0f);
    for (int64_t d = 0; d < hd; d += 8) {
      _mm256_storeu_ps(out + r * out_stride + d, _mm256_mul_ps(_mm256_load_ps(acc[r] + d), inv));
    }
  }
}

// One query row (a decode head without grouped-query sharing), kRowSpan positions at a
// time in three passes: the span's scores (8 positions at a time, each its own dot
// accumulator, q loaded once per 8 dimensions, the 8 sums reduced into one vector), then
// its maximum and exps in place, then its values summed with the weights broadcast into
// accumulators that stay in registers (64 dimensions at a time). The online softmax meets
// only the spans (one rescale per span at most), so no position waits on the one before:
// updated per chunk of 8, every chunk's values waited on its max, branch and exps
// (BM_Attend group 1, f16, head size 64, 2048 positions, Zen 4: 25 -> 33 GB/s;
// docs/benchmarks.md). Transposing the keys costs more than it saves for one row.
constexpr int kRowSpan = 128;
constexpr int kSliceVecs = 8;  // value accumulators: 64 dimensions

// acc[0 .. 8 nv) += sum over j < n of w[j] * v[j][0 .. 8 nv)
template <int NV, class T>
inline void add_weighted_values(const T* const* v, const float* w, int n, int64_t d0, float* acc) {
  __m256 a[NV];
  for (int i = 0; i < NV; ++i) a[i] = _mm256_load_ps(acc + 8 * i);
  for (int j = 0; j < n; ++j) {
    const __m256 wj = _mm256_broadcast_ss(w + j);
    for (int i = 0; i < NV; ++i) a[i] = _mm256_fmadd_ps(wj, load8(v[j] + d0 + 8 * i), a[i]);
  }
  for (int i = 0; i < NV; ++i) _mm256_store_ps(acc + 8 * i, a[i]);
}

template <class T>
void attend_row(const float* q, int64_t hd, const PagedKv& kv, int64_t n_pos, float scale, float slope,
                float* out) {
  alignas(32) float acc[kMaxHeadDim];
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
        for (int j = 0; j < kChunk; ++j) p[j] = _mm256_fmadd_ps(qd, load8(k[c + j] + d0), p[j]);
      }
      __m256 sr = _mm256_mul_ps(reduce8(p), scale_v);
      if (slope != 0.0f) {
        sr = _mm256_fmadd_ps(_mm256_add_ps(lane_pos, _mm256_set1_ps(static_cast<float>(s0 + c))), _mm256_set1_ps(slope), sr);
      }
      sr = _mm256_blendv_ps(neg_inf, sr, _mm256_castsi256_ps(tail_mask(n)));
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
      // past the span's end: exp(-inf) = 0 (exp256 clamps to -104: a subnormal), so mask
      const __m256 e = _mm256_and_ps(exp256(_mm256_sub_ps(_mm256_load_ps(w + c), mv)),
                                     _mm256_castsi256_ps(tail_mask(ns - c)));
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

void attend_row_any(const float* q, int64_t hd, const PagedKv& kv, int64_t n_pos, float scale, float slope,
                    float* out) {
  if (kv.dtype == DType::kF16) return attend_row<uint16_t>(q, hd, kv, n_pos, scale, slope, out);
  attend_row<float>(q, hd, kv, n_pos, scale, slope, out);
}

// attend_rows with the row count as a constant (the accumulators stay in registers).
template <class T>
void attend_rows_n(const float* q, int64_t q_stride, int nr, int64_t hd, const PagedKv& kv, const int64_t* n_vis,
                   float scale, const float* slopes, float* out, int64_t out_stride) {
  static_assert(kBlockRows == 8);
  using Fn = void (*)(const float*, int64_t, int64_t, const PagedKv&, const int64_t*, float, const float*, float*,
                      int64_t);
  static constexpr Fn kByRows[kBlockRows] = {attend_rows<T, 1>, attend_rows<T, 2>, attend_rows<T, 3>,
                                             attend_rows<T, 4>, attend_rows<T, 5>, attend_rows<T, 6>,
                                             attend_rows<T, 7>, attend_rows<T, 8>};
  kByRows[nr - 1](q, q_stride, hd, kv, n_vis, scale, slopes, out, out_stride);
}

void attend_rows_any(const float* q, int64_t q_stride, int nr, int64_t hd, const PagedKv& kv, const int64_t* n_vis,
                     float scale, const float* slopes, float* out, int64_t out_stride) {
  if (kv.dtype == DType::kF16) return attend_rows_n<uint16_t>(q, q_stride, nr, hd, kv, n_vis, scale, slopes, out, out_stride);
  attend_rows_n<float>(q, q_stride, nr, hd, kv, n_vis, scale, slopes, out, out_stride);
}

bool avx2_fits(int64_t head_dim) { return head_dim % 8 == 0 && head_dim <= kMaxHeadDim; }

}  // namespace

void avx2_attend(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos, float scale,
                 const float* slopes, float* out) {
  if (!avx2_fits(head_dim)) return attend_scalar(q, group, head_dim, kv, n_pos, scale, slopes, out);
  int64_t n_vis[kBlockRows];
  std::fill(n_vis, n_vis + kBlockRows, n_pos);
  if (group < kMinSharedRows) {  // one row at a time reads the KV head again, still cheaper
    for (int64_t g = 0; g < group; ++g) {
      attend_row_any(q + g * head_dim, head_dim, kv, n_pos, scale, slopes != nullptr ? slopes[g] : 0.0f,
                     out + g * head_dim);
    }
    return;
  }
  for (int64_t g0 = 0; g0 < group; g0 += kBlockRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kBlockRows, group - g0));
    float sl[kBlockRows] = {};
    for (int r = 0; r < nr; ++r) sl[r] = slopes != nullptr ? slopes[g0 + r] : 0.0f;
    attend_rows_any(q + g0 * head_dim, head_dim, nr, head_dim, kv, n_vis, scale, sl, out + g0 * head_dim, head_dim);
  }
}

void avx2_attend_causal(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                        int64_t first_pos, float scale, const float* slope, float* out, int64_t out_stride) {
  if (!avx2_fits(head_dim)) {
    return attend_causal_scalar(q, q_stride, n_q, head_dim, kv, first_pos, scale, slope, out, out_stride);
  }
  const float s = slope != nullptr ? *slope : 0.0f;
  float sl[kBlockRows];
  std::fill(sl, sl + kBlockRows, s);
  for (int64_t i0 = 0; i0 < n_q; i0 += kBlockRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kBlockRows, n_q - i0));
    int64_t n_vis[kBlockRows];
    for (int r = 0; r < kBlockRows; ++r) n_vis[r] = first_pos + i0 + r + 1;
    attend_rows_any(q + i0 * q_stride, q_stride, nr, head_dim, kv, n_vis, scale, sl, out + i0 * out_stride,
                    out_stride);
  }
}

// ---- element-wise ops ------------------------------------------------------------
float avx2_dot_f32(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i < n; i += 8) {
    const __m256i m = tail_mask(n - i);
    acc0 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), acc0);
  }
  return hsum(_mm256_add_ps(acc0, acc1));
}

void avx2_axpy_f32(float* y, float a, const float* x, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    // the product rounded before the add, as the scalar loop (no FMA contraction:
    // the asm barrier keeps GCC from fusing mul and add)
    __m256 prod = _mm256_mul_ps(av, _mm256_loadu_ps(x + i));
    __asm__("" : "+x"(prod));
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), prod));
  }
  for (; i < n; ++i) {
    float prod = a * x[i];
    __asm__("" : "+x"(prod));
    y[i] += prod;
  }
}

void avx2_f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = static_cast<uint16_t>(_cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// x * sigmoid(x) * up for 8 lanes
inline __m256 swiglu8(__m256 g, __m256 up) {
  const __m256 sig = _mm256_div_ps(_mm256_set1_ps(1.0f),
                                   _mm256_add_ps(_mm256_set1_ps(1.0f), exp256(_mm256_sub_ps(_mm256_setzero_ps(), g))));
  return _mm256_mul_ps(_mm256_mul_ps(g, sig), up);
}

// Masked loads and stores for the tail only: vmaskmovps stores are slow on AMD
// (kernels_bench BM_Swiglu, Zen 4: every vector masked ran at 0.5 Gelem/s).
void avx2_swiglu(float* out, const float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, swiglu8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(out + i, m, swiglu8(_mm256_maskload_ps(gate + i, m), _mm256_maskload_ps(up + i, m)));
  }
}

// Each vector of 8 exps is added into 4 + 4 double lanes (the scalar twin's precision).
double avx2_sum_exp(const float* x, int64_t n, float shift) {
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  const __m256 sv = _mm256_set1_ps(shift);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = tail_mask(n - i);
    const __m256 e = _mm256_and_ps(exp256(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), sv)), _mm256_castsi256_ps(m));
    acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  const __m256d s = _mm256_add_pd(acc0, acc1);
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, s);
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

}  // namespace plimsoll::kernels
