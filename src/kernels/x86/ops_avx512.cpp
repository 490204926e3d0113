// AVX-512 twins of the f32 vector ops (dot_f32, axpy_f32, swiglu, sum_exp,
// f32_to_f16_row): the shared drivers (simd_ops.h) over the AVX-512 vector trait, with
// attention_avx512.cpp's attention: the AVX-512 table's VecKernels.
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors (GCC PR105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstdint>

#include "kernels/matmul_impl.h"
#include "kernels/simd_ops.h"
#include "kernels/x86/avx512_vec.h"

namespace plimsoll::kernels {

// attention: attention_avx512.cpp's entries
const VecKernels& avx512_vec_kernels() {
  static constexpr VecKernels k = simd_vec_kernels<Avx512Vec>(avx512_attend, avx512_attend_causal);
  return k;
}

}  // namespace plimsoll::kernels
