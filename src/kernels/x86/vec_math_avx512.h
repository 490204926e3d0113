// Vector math for the AVX-512 element-wise kernels: exp over 16 floats.
#pragma once

#include <immintrin.h>

namespace plimsoll::kernels {

// exp(x) lane-wise: x = n ln2 + r (|r| <= ln2 / 2, two-part ln2), a degree-6
// polynomial for e^r (Cephes expf's coefficients), then scalef by 2^n.
// Relative error ~2 ulp; below ~-103 it returns 0, above 88.7 +inf.
inline __m512 exp512(__m512 x) {
  x = _mm512_min_ps(x, _mm512_set1_ps(88.72f));
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

}  // namespace plimsoll::kernels
