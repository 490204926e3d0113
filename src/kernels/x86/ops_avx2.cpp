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
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

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

// Lane j = sum of v[j]'s 8 lanes.
inline __m256 sum8x8(const __m256 (&v)[8]) {
  const __m256 b0 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
  const __m256 b1 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(b0, b1, 0x20), _mm256_permute2f128_ps(b0, b1, 0x31));
}

// One query row over positions [0, n_pos): online softmax, 8 positions a step.
template <class T>
void attend_row(const float* q, int64_t hd, const PagedKv& kv, int64_t n_pos, float scale, float slope, float* out) {
  alignas(32) float acc[kMaxHeadDim];
  std::fill(acc, acc + hd, 0.0f);
  float max_score = -std::numeric_limits<float>::infinity(), denom = 0.0f;
  const T* keys = static_cast<const T*>(kv.keys);
  const T* values = static_cast<const T*>(kv.values);
  const __m256 lane_pos = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  int64_t block = 0, row = 0;
  for (int64_t p0 = 0; p0 < n_pos; p0 += kChunk) {
    const int n = static_cast<int>(std::min<int64_t>(kChunk, n_pos - p0));
    const T* k[kChunk];
    const T* v[kChunk];
    for (int j = 0; j < n; ++j, ++row) {
      if (row == kv.block_tokens) {
        row = 0;
        ++block;
      }
      const int64_t off = kv.blocks[block] * kv.block_stride + row * kv.pos_stride;
      k[j] = keys + off;
      v[j] = values + off;
    }
    __m256 part[kChunk];
    for (int j = 0; j < kChunk; ++j) part[j] = _mm256_setzero_ps();
    for (int64_t d = 0; d < hd; d += 8) {
      const __m256 qd = _mm256_loadu_ps(q + d);
      for (int j = 0; j < n; ++j) part[j] = _mm256_fmadd_ps(qd, load8(k[j] + d), part[j]);
    }
    __m256 s = _mm256_mul_ps(sum8x8(part), _mm256_set1_ps(scale));
    if (slope != 0.0f) {
      s = _mm256_fmadd_ps(_mm256_add_ps(lane_pos, _mm256_set1_ps(static_cast<float>(p0))), _mm256_set1_ps(slope), s);
    }
    const __m256 live = _mm256_castsi256_ps(tail_mask(n));
    s = _mm256_blendv_ps(_mm256_set1_ps(-std::numeric_limits<float>::infinity()), s, live);
    const float chunk_max = hmax(s);
    if (chunk_max > max_score) {
      const float rescale = std::exp(max_score - chunk_max);
      denom *= rescale;
      const __m256 rv = _mm256_set1_ps(rescale);
      for (int64_t d = 0; d < hd; d += 8) _mm256_store_ps(acc + d, _mm256_mul_ps(_mm256_load_ps(acc + d), rv));
      max_score = chunk_max;
    }
    const __m256 e = _mm256_and_ps(exp256(_mm256_sub_ps(s, _mm256_set1_ps(max_score))), live);
    denom += hsum(e);
    alignas(32) float w[kChunk];
    _mm256_store_ps(w, e);
    for (int64_t d = 0; d < hd; d += 8) {
      __m256 a = _mm256_load_ps(acc + d);
      for (int j = 0; j < n; ++j) a = _mm256_fmadd_ps(_mm256_set1_ps(w[j]), load8(v[j] + d), a);
      _mm256_store_ps(acc + d, a);
    }
  }
  const __m256 inv = _mm256_set1_ps(denom > 0.0f ? 1.0f / denom : 0.0f);
  for (int64_t d = 0; d < hd; d += 8) _mm256_storeu_ps(out + d, _mm256_mul_ps(_mm256_load_ps(acc + d), inv));
}

bool avx2_fits(int64_t head_dim) { return head_dim % 8 == 0 && head_dim <= kMaxHeadDim; }

}  // namespace

void avx2_attend(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos, float scale,
                 const float* slopes, float* out) {
  if (!avx2_fits(head_dim)) return attend_scalar(q, group, head_dim, kv, n_pos, scale, slopes, out);
  for (int64_t g = 0; g < group; ++g) {
    const float slope = slopes != nullptr ? slopes[g] : 0.0f;
    if (kv.dtype == DType::kF16) {
      attend_row<uint16_t>(q + g * head_dim, head_dim, kv, n_pos, scale, slope, out + g * head_dim);
    } else {
      attend_row<float>(q + g * head_dim, head_dim, kv, n_pos, scale, slope, out + g * head_dim);
    }
  }
}

void avx2_attend_causal(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                        int64_t first_pos, float scale, const float* slope, float* out, int64_t out_stride) {
  if (!avx2_fits(head_dim)) {
    return attend_causal_scalar(q, q_stride, n_q, head_dim, kv, first_pos, scale, slope, out, out_stride);
  }
  for (int64_t i = 0; i < n_q; ++i) {
    avx2_attend(q + i * q_stride, 1, head_dim, kv, first_pos + i + 1, scale, slope, out + i * out_stride);
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

void avx2_swiglu(float* out, const float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = tail_mask(n - i);
    const __m256 g = _mm256_maskload_ps(gate + i, m);
    const __m256 sig = _mm256_div_ps(_mm256_set1_ps(1.0f),
                                     _mm256_add_ps(_mm256_set1_ps(1.0f), exp256(_mm256_sub_ps(_mm256_setzero_ps(), g))));
    _mm256_maskstore_ps(out + i, m, _mm256_mul_ps(_mm256_mul_ps(g, sig), _mm256_maskload_ps(up + i, m)));
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
