// AVX-512 activation quantization shared by the x86 tile kernels (tiles_avx512.cpp,
// tiles_amx.cpp): one 32-float block to Q8_0 exactly as the scalar quantize_q8_0.
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
