// AArch64 NEON twins of the f32 vector ops (dot_f32, axpy_f32, swiglu, sum_exp,
// f32_to_f16_row) and of attention (attend, attend_causal), for every ARM level
// (plain NEON is the AArch64 baseline, so this file needs no extra flags): the shared
// drivers (simd_ops.h, simd_attention.h) over the NEON vector trait.
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/attention_driver.h"
#include "kernels/matmul_impl.h"
#include "kernels/simd_attention.h"
#include "kernels/simd_ops.h"
#include "kernels/arm/neon_vec.h"

namespace plimsoll::kernels {

const VecKernels& neon_vec_kernels() {
  using K = SimdAttention<NeonVec>;
  static constexpr VecKernels k = simd_vec_kernels<NeonVec>(attend_with<K>, attend_causal_with<K>);
  return k;
}

}  // namespace plimsoll::kernels
