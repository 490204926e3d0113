// The AVX2 + FMA + F16C vector trait of the shared drivers (simd_ops.h, simd_math.h,
// simd_attention.h): 8 float lanes. Include only from files compiled with those flags
// (internal linkage).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/x86/ymm_common.h"

namespace plimsoll::kernels {
namespace {

struct Avx2Vec {
  using F = __m256;   // 8 floats
  using M = __m256i;  // lanes set: all ones
  using D = __m256d;  // 4 doubles
  static constexpr int kLanes = 8;
  static constexpr int kDotAccs = 2, kDotTailAcc = 0;
  // Attention: two chunks of 8 positions per softmax update (one update per chunk left
  // every chunk's values waiting on its max, branch and exps).
  static constexpr int kSpanChunks = 2;

  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static F load(const float* p) { return _mm256_load_ps(p); }  // 32-byte aligned
  static F loadu(const float* p) { return _mm256_loadu_ps(p); }
  static F widen(const float* p) { return _mm256_loadu_ps(p); }
  static F widen(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void store(float* p, F v) { _mm256_store_ps(p, v); }
  static void storeu(float* p, F v) { _mm256_storeu_ps(p, v); }
  // Lanes i < n set (any n). Masked loads and stores for a row's tail only: vmaskmovps
  // stores are slow on AMD (every vector masked ran swiglu at a fraction of the speed).
  static M first(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static F load_first(const float* p, int64_t n) { return _mm256_maskload_ps(p, first(n)); }
  static void store_first(float* p, F v, int64_t n) { _mm256_maskstore_ps(p, first(n), v); }
  static F select(M m, F set, F unset) { return _mm256_blendv_ps(unset, set, _mm256_castsi256_ps(m)); }
  static F keep(F x, M m) { return _mm256_and_ps(x, _mm256_castsi256_ps(m)); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F min(F a, F b) { return _mm256_min_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }    // a * b + c
  static F fnma(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a * b
  // a * b rounded on its own (the asm barrier keeps GCC from fusing it into an add)
  static F mul_unfused(F a, F b) {
    F p = _mm256_mul_ps(a, b);
    __asm__("" : "+x"(p));
    return p;
  }
  static F round(F x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // p * 2^n for simd_exp's integral n, as two exponent-field factors (each a normal float)
  static F ldexp(F p, F n) {
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    return _mm256_mul_ps(_mm256_mul_ps(p, pow2(n1)), pow2(_mm256_sub_epi32(ni, n1)));
  }
  static float hsum(F v) { return kernels::hsum(v); }
  static float hmax(F v) { return kernels::hmax(v); }
  static F lane_positions() { return _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7); }
  static void transpose(F (&t)[8]) { transpose8(t); }
  // s[r] lane j = dot(q + r * q_stride, key j) over the transposed keys kt (kt[d * 8 + j]).
  template <int nr>
  static void score_rows(const float* q, int64_t q_stride, const float* kt, int64_t hd, F (&s)[nr]) {
    for (int r = 0; r < nr; ++r) s[r] = _mm256_setzero_ps();
    for (int64_t d = 0; d < hd; ++d) {
      const F kd = _mm256_load_ps(kt + d * kLanes);
      for (int r = 0; r < nr; ++r) s[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(q + r * q_stride + d), kd, s[r]);
    }
  }
  static D zero_d() { return _mm256_setzero_pd(); }
  static void add_doubles(D& lo, D& hi, F e) {
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  static double hsum_d(D lo, D hi) {
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, _mm256_add_pd(lo, hi));
    return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  }
  static void store_f16(uint16_t* p, F v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static void store_f16_first(uint16_t* p, F v, int64_t n) {
    uint16_t h[8];
    store_f16(h, v);
    std::memcpy(p, h, static_cast<size_t>(n) * sizeof(uint16_t));
  }

 private:
  // 2^n for integer-valued n in [-75, 64] (a normal float).
  static F pow2(__m256i n) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23)); }
};

}  // namespace
}  // namespace plimsoll::kernels
