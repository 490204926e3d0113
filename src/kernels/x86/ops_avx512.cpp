// AVX-512 twins of the f32 vector ops (dot_f32, axpy_f32, swiglu, sum_exp,
// f32_to_f16_row): the shared drivers (simd_ops.h) over the AVX-512 vector trait.
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors (GCC PR105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>

#include "kernels/matmul_impl.h"
#include "kernels/simd_ops.h"
#include "kernels/x86/avx512_vec.h"

namespace plimsoll::kernels {

using V512 = Avx512Vec;

float avx512_dot_f32(const float* a, const float* b, int64_t n) { return simd_dot<V512>(a, b, n); }
void avx512_axpy_f32(float* y, float a, const float* x, int64_t n) { simd_axpy<V512>(y, a, x, n); }
void avx512_f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) { simd_f32_to_f16_row<V512>(src, dst, n); }
void avx512_swiglu(float* out, const float* gate, const float* up, int64_t n) { simd_swiglu<V512>(out, gate, up, n); }
double avx512_sum_exp(const float* x, int64_t n, float shift) { return simd_sum_exp<V512>(x, n, shift); }

}  // namespace plimsoll::kernels
