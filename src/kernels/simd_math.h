// exp over a vector trait V (x86/avx2_vec.h, x86/avx512_vec.h, arm/neon_vec.h), the one
// polynomial of every SIMD level. Internal linkage: include from ISA-flagged files.
#pragma once

namespace plimsoll::kernels {
namespace {

// exp(x) lane-wise: x = n ln2 + r (|r| <= ln2 / 2, two-part ln2), a degree-6 polynomial
// for e^r (Cephes expf's coefficients), then times 2^n (V::ldexp; split in two factors
// where there is no scalef, so that subnormal results stay exact). Relative error ~2 ulp;
// x clamped to [-104, 88.72]: below ~-103 it returns 0 (or a subnormal), above 88.7 +inf.
template <class V>
inline typename V::F simd_exp(typename V::F x) {
  using F = typename V::F;
  x = V::min(x, V::set1(88.72f));
  x = V::max(x, V::set1(-104.0f));
  const F n = V::round(V::mul(x, V::set1(1.44269504088896341f)));
  F r = V::fnma(n, V::set1(0.693359375f), x);
  r = V::fnma(n, V::set1(-2.12194440e-4f), r);
  F p = V::set1(1.9875691500e-4f);
  p = V::fma(p, r, V::set1(1.3981999507e-3f));
  p = V::fma(p, r, V::set1(8.3334519073e-3f));
  p = V::fma(p, r, V::set1(4.1665795894e-2f));
  p = V::fma(p, r, V::set1(1.6666665459e-1f));
  p = V::fma(p, r, V::set1(5.0000001201e-1f));
  p = V::fma(p, V::mul(r, r), V::add(r, V::set1(1.0f)));
  return V::ldexp(p, n);
}

}  // namespace
}  // namespace plimsoll::kernels
