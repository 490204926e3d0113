// transpose16: a 16 x 16 transpose of 32-bit lanes in zmm registers, shared by
// the AMX kernels and attention. Include only from files compiled with the
// AVX-512 flags (static: no shared inline copy leaves an ISA-flagged file).
#pragma once

#include <immintrin.h>

namespace plimsoll::kernels {

// In place: v[i] lane j <- v[j] lane i (any 32-bit lanes, as floats).
static inline void transpose16(__m512 (&v)[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
  }
  __m512 u[16];  // u[4i + j], 128-bit lane L: column 4L + j of rows 4i..4i+3
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    u[4 * i + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int j = 0; j < 4; ++j) {
    const __m512 e0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88), o0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
    const __m512 e1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
    const __m512 o1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
    v[j] = _mm512_shuffle_f32x4(e0, e1, 0x88);
    v[8 + j] = _mm512_shuffle_f32x4(e0, e1, 0xDD);
    v[4 + j] = _mm512_shuffle_f32x4(o0, o1, 0x88);
    v[12 + j] = _mm512_shuffle_f32x4(o0, o1, 0xDD);
  }
}

}  // namespace plimsoll::kernels
