// The AVX-512 vector trait of the shared row-op drivers (simd_ops.h, simd_math.h): 16
// float lanes, tails by mask; and exp512, simd_exp over it. Include only from files
// compiled with AVX-512 F/BW/VL (internal linkage).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/simd_math.h"

namespace plimsoll::kernels {
namespace {

struct Avx512Vec {
  using F = __m512;
  using M = __mmask16;
  using D = __m512d;
  static constexpr int kLanes = 16;
  static constexpr int kDotAccs = 2, kDotTailAcc = 0;

  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, F v) { _mm512_storeu_ps(p, v); }
  // Lanes i < n set (n >= 0).
  static M first(int64_t n) { return n >= 16 ? static_cast<M>(0xFFFF) : static_cast<M>((1u << n) - 1); }
  static F load_first(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(first(n), p); }
  static void store_first(float* p, F v, int64_t n) { _mm512_mask_storeu_ps(p, first(n), v); }
  static F keep(F x, M m) { return _mm512_maskz_mov_ps(m, x); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F min(F a, F b) { return _mm512_min_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }    // a * b + c
  static F fnma(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a * b
  // a * b rounded on its own (the explicit-rounding form: GCC does not contract it into an FMA)
  static F mul_unfused(F a, F b) { return _mm512_mul_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static F round(F x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static F ldexp(F p, F n) { return _mm512_scalef_ps(p, n); }
  static float hsum(F v) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, v);
    const __m256 s8 = _mm256_add_ps(_mm256_load_ps(lanes), _mm256_load_ps(lanes + 8));
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
    return _mm_cvtss_f32(s4);
  }
  static D zero_d() { return _mm512_setzero_pd(); }
  static void add_doubles(D& lo, D& hi, F e) {
    lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  static double hsum_d(D lo, D hi) { return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi)); }
  static void store_f16(uint16_t* p, F v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static void store_f16_first(uint16_t* p, F v, int64_t n) {
    _mm256_mask_storeu_epi16(p, first(n), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

// exp(x) over 16 floats (simd_exp; scalef applies 2^n).
inline __m512 exp512(__m512 x) { return simd_exp<Avx512Vec>(x); }

}  // namespace
}  // namespace plimsoll::kernels
