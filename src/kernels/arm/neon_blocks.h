// Q8_0 / Q4_0 blocks as NEON registers, for the AArch64 matmul files (neon_matmul.inc's
// two builds and matmul_neon_i8mm.cpp). Internal linkage (an anonymous namespace): each
// file, built with its own -march, keeps its own copy.
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "kernels/blocks.h"

namespace plimsoll::kernels {
namespace {

// An f16 scale as f32 (FCVTL: exact).
inline float half_to_f32(uint16_t h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }

// A block's 32 signed weights as two int8x16 (Q4_0: nibble - 8, element order).
inline void load_block(const BlockQ8_0& b, int8x16_t* lo, int8x16_t* hi) {
  *lo = vld1q_s8(b.qs);
  *hi = vld1q_s8(b.qs + 16);
}
inline void load_block(const BlockQ4_0& b, int8x16_t* lo, int8x16_t* hi) {
  const uint8x16_t q = vld1q_u8(b.qs);
  *lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F))), vdupq_n_s8(8));
  *hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), vdupq_n_s8(8));
}

}  // namespace
}  // namespace plimsoll::kernels
