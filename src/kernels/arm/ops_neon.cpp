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

using Neon = NeonVec;

void neon_attend(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos, float scale,
                 const float* slopes, float* out) {
  attend_with<SimdAttention<Neon>>(q, group, head_dim, kv, n_pos, scale, slopes, out);
}

void neon_attend_causal(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                        int64_t first_pos, float scale, const float* slope, float* out, int64_t out_stride) {
  attend_causal_with<SimdAttention<Neon>>(q, q_stride, n_q, head_dim, kv, first_pos, scale, slope, out, out_stride);
}

float neon_dot_f32(const float* a, const float* b, int64_t n) { return simd_dot<Neon>(a, b, n); }
void neon_axpy_f32(float* y, float a, const float* x, int64_t n) { simd_axpy<Neon>(y, a, x, n); }
void neon_f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) { simd_f32_to_f16_row<Neon>(src, dst, n); }
void neon_swiglu(float* out, const float* gate, const float* up, int64_t n) { simd_swiglu<Neon>(out, gate, up, n); }
double neon_sum_exp(const float* x, int64_t n, float shift) { return simd_sum_exp<Neon>(x, n, shift); }

}  // namespace plimsoll::kernels
