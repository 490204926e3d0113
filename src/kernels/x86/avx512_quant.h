// AVX-512 activation quantization shared by the x86 tile kernels (tiles_avx512.cpp,
// tiles_amx.cpp, the K-quant tiles): one 32-float block to Q8_0 exactly as the
// scalar quantize_q8_0, one 256-float super-block to Q8_K as quantize_q8_k.
// Include only from files compiled with the AVX-512 flags (functions are static:
// no shared inline copies leave an ISA-flagged file).
#pragma once

#include <immintrin.h>

namespace plimsoll::kernels {

static inline float avx512_hmax(__m512 v) {
  const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Round half away from zero (std::round) of values well inside int32 range.
static inline __m512 round_away(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(v, t));  // exact
  const __mmask16 up = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 one = _mm512_or_ps(_mm512_set1_ps(1.f), _mm512_and_ps(v, _mm512_set1_ps(-0.f)));
  return _mm512_mask_add_ps(t, up, t, one);
}

// One block of 32 floats as quantize_q8_0 does it: scale d = amax / 127 stored
// as f16 (returned widened), values round(x / d) as 16 + 16 int8.
static inline float quantize_block(const float* x, __m128i* lo, __m128i* hi) {
  const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
  const float amax = avx512_hmax(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
  const float d = amax / 127.f;
  const float id = d != 0.f ? 1.f / d : 0.f;
  const __m512 idv = _mm512_set1_ps(id);
  *lo = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(round_away(_mm512_mul_ps(v0, idv))));
  *hi = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(round_away(_mm512_mul_ps(v1, idv))));
  return _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
}

}  // namespace plimsoll::kernels

namespace plimsoll::kernels {

// One 256-float super-block to Q8_K exactly as the scalar quantize_q8_k: the
// scale comes from the first element of largest magnitude (iscale = -127 / it),
// q = min(127, round-half-even(iscale * x)), bsums per 16 values, d = 1 / iscale;
// an all-zero block gives zeros. q: 256 int8 in element order.
static inline float quantize_q8k_block(const float* x, int8_t* q, int16_t* bsums) {
  __m512 vmax = _mm512_setzero_ps();
  for (int i = 0; i < 256; i += 16) vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_loadu_ps(x + i)));
  const float amax = avx512_hmax(vmax);
  if (amax == 0.f) {
    for (int i = 0; i < 256; i += 64) _mm512_storeu_si512(q + i, _mm512_setzero_si512());
    for (int g = 0; g < 16; ++g) bsums[g] = 0;
    return 0.f;
  }
  float max = 0.f;
  for (int i = 0; i < 256; i += 16) {  // the first element with |x| == amax, as the scalar scan keeps it
    const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + i)), _mm512_set1_ps(amax), _CMP_EQ_OQ);
    if (hit != 0) {
      max = x[i + __builtin_ctz(hit)];
      break;
    }
  }
  const float iscale = -127.f / max;
  const __m512 is = _mm512_set1_ps(iscale);
  for (int g = 0; g < 16; ++g) {  // cvtps rounds half to even (default MXCSR), as nearest_int
    const __m512i v = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(is, _mm512_loadu_ps(x + 16 * g))),
                                       _mm512_set1_epi32(127));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16 * g), _mm512_cvtsepi32_epi8(v));
    bsums[g] = static_cast<int16_t>(_mm512_reduce_add_epi32(v));
  }
  return 1.f / iscale;
}

}  // namespace plimsoll::kernels
