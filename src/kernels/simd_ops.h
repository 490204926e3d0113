// The f32 row ops with ISA paths (dot_f32, axpy_f32, swiglu, sum_exp, f32_to_f16_row;
// kernels.h) written once over a vector trait V (x86/avx2_vec.h, x86/avx512_vec.h,
// arm/neon_vec.h): whole vectors, then one zero-padded tail vector (V::load_first /
// store_first). Internal linkage: include from the ISA-flagged file of each level.
#pragma once

#include <cstdint>

#include "kernels/matmul_impl.h"
#include "kernels/simd_math.h"

namespace plimsoll::kernels {
namespace {

// V::kDotAccs partial sums of V::kLanes lanes (several FMA chains in flight), whole
// vectors past them into the first, the tail into V::kDotTailAcc; summed in adjacent
// pairs, then across lanes.
template <class V>
float simd_dot(const float* a, const float* b, int64_t n) {
  using F = typename V::F;
  constexpr int kL = V::kLanes, kA = V::kDotAccs;
  F acc[kA];
  for (int k = 0; k < kA; ++k) acc[k] = V::zero();
  int64_t i = 0;
  for (; i + kA * kL <= n; i += kA * kL) {
    for (int k = 0; k < kA; ++k) acc[k] = V::fma(V::loadu(a + i + k * kL), V::loadu(b + i + k * kL), acc[k]);
  }
  for (; i + kL <= n; i += kL) acc[0] = V::fma(V::loadu(a + i), V::loadu(b + i), acc[0]);
  if (i < n) acc[V::kDotTailAcc] = V::fma(V::load_first(a + i, n - i), V::load_first(b + i, n - i), acc[V::kDotTailAcc]);
  for (int step = 1; step < kA; step *= 2) {
    for (int k = 0; k + step < kA; k += 2 * step) acc[k] = V::add(acc[k], acc[k + step]);
  }
  return V::hsum(acc[0]);
}

// y += a * x with the product rounded before the add, as the scalar loop (no FMA).
template <class V>
void simd_axpy(float* y, float a, const float* x, int64_t n) {
  const typename V::F av = V::set1(a);
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::storeu(y + i, V::add(V::loadu(y + i), V::mul_unfused(av, V::loadu(x + i))));
  if (i < n) {
    V::store_first(y + i, V::add(V::load_first(y + i, n - i), V::mul_unfused(av, V::load_first(x + i, n - i))), n - i);
  }
}

// g * sigmoid(g) * up
template <class V>
inline typename V::F simd_swiglu_vec(typename V::F g, typename V::F up) {
  const typename V::F one = V::set1(1.0f);
  const typename V::F sig = V::div(one, V::add(one, simd_exp<V>(V::sub(V::zero(), g))));
  return V::mul(V::mul(g, sig), up);
}

template <class V>
void simd_swiglu(float* out, const float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::storeu(out + i, simd_swiglu_vec<V>(V::loadu(gate + i), V::loadu(up + i)));
  if (i < n) {
    V::store_first(out + i, simd_swiglu_vec<V>(V::load_first(gate + i, n - i), V::load_first(up + i, n - i)), n - i);
  }
}

// Each vector of exps is added into two vectors of double lanes (the scalar twin's
// precision over a whole vocabulary).
template <class V>
double simd_sum_exp(const float* x, int64_t n, float shift) {
  typename V::D lo = V::zero_d(), hi = V::zero_d();
  const typename V::F sv = V::set1(shift);
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::add_doubles(lo, hi, simd_exp<V>(V::sub(V::loadu(x + i), sv)));
  if (i < n) V::add_doubles(lo, hi, V::keep(simd_exp<V>(V::sub(V::load_first(x + i, n - i), sv)), V::first(n - i)));
  return V::hsum_d(lo, hi);
}

// Rounded to nearest even, as f32_to_f16.
template <class V>
void simd_f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store_f16(dst + i, V::loadu(src + i));
  if (i < n) V::store_f16_first(dst + i, V::load_first(src + i, n - i), n - i);
}

// A level's VecKernels: these drivers over V, and its attention entries.
template <class V>
constexpr VecKernels simd_vec_kernels(decltype(VecKernels::attend) attend,
                                      decltype(VecKernels::attend_causal) attend_causal) {
  return {simd_dot<V>, simd_axpy<V>, simd_swiglu<V>, simd_sum_exp<V>, simd_f32_to_f16_row<V>, attend, attend_causal};
}

}  // namespace
}  // namespace plimsoll::kernels
