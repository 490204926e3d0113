// quantize_row / dequantize_row: the per-dtype row codecs behind one switch.
// Float dtypes convert with core/half.h (exact, round-to-nearest-even).
#include <cassert>
#include <cstring>

#include "core/half.h"
#include "kernels/codecs.h"
#include "kernels/kernels.h"

namespace plimsoll::kernels {

void dequantize_row(DType dtype, const void* src, float* dst, int64_t n) {
  const auto* u16 = static_cast<const uint16_t*>(src);
  switch (dtype) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case DType::kF16: for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(u16[i]); return;
    case DType::kBF16: for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(u16[i]); return;
    case DType::kQ8_0: dequantize_q8_0(static_cast<const BlockQ8_0*>(src), dst, n); return;
    case DType::kQ4_0: dequantize_q4_0(static_cast<const BlockQ4_0*>(src), dst, n); return;
    case DType::kQ4_K: dequantize_q4_k(static_cast<const BlockQ4K*>(src), dst, n); return;
    case DType::kQ5_K: dequantize_q5_k(static_cast<const BlockQ5K*>(src), dst, n); return;
    case DType::kQ6_K: dequantize_q6_k(static_cast<const BlockQ6K*>(src), dst, n); return;
    case DType::kQ8_K: dequantize_q8_k(static_cast<const BlockQ8K*>(src), dst, n); return;
    case DType::kQ4_1: dequantize_q4_1(static_cast<const BlockQ4_1*>(src), dst, n); return;
    case DType::kQ5_0: dequantize_q5_0(static_cast<const BlockQ5_0*>(src), dst, n); return;
    case DType::kQ5_1: dequantize_q5_1(static_cast<const BlockQ5_1*>(src), dst, n); return;
    case DType::kIQ4_NL: dequantize_iq4_nl(static_cast<const BlockIQ4NL*>(src), dst, n); return;
    case DType::kIQ4_XS: dequantize_iq4_xs(static_cast<const BlockIQ4XS*>(src), dst, n); return;
    case DType::kQ3_K: dequantize_q3_k(static_cast<const BlockQ3K*>(src), dst, n); return;
    case DType::kQ2_K: dequantize_q2_k(static_cast<const BlockQ2K*>(src), dst, n); return;
    case DType::kIQ2_XXS: dequantize_iq2_xxs(static_cast<const BlockIQ2XXS*>(src), dst, n); return;
    case DType::kIQ2_XS: dequantize_iq2_xs(static_cast<const BlockIQ2XS*>(src), dst, n); return;
    case DType::kIQ3_XXS: dequantize_iq3_xxs(static_cast<const BlockIQ3XXS*>(src), dst, n); return;
    case DType::kIQ1_S: dequantize_iq1_s(static_cast<const BlockIQ1S*>(src), dst, n); return;
    case DType::kIQ3_S: dequantize_iq3_s(static_cast<const BlockIQ3S*>(src), dst, n); return;
    case DType::kIQ2_S: dequantize_iq2_s(static_cast<const BlockIQ2S*>(src), dst, n); return;
    case DType::kIQ1_M: dequantize_iq1_m(static_cast<const BlockIQ1M*>(src), dst, n); return;
  }
  assert(false && "unknown dtype");
}

void quantize_row(DType dtype, const float* src, void* dst, int64_t n) {
  assert(n % dtype_traits(dtype).block_elems == 0);
  auto* u16 = static_cast<uint16_t*>(dst);
  switch (dtype) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case DType::kF16: f32_to_f16_row(src, u16, n); return;
    case DType::kBF16: for (int64_t i = 0; i < n; ++i) u16[i] = f32_to_bf16(src[i]); return;
    case DType::kQ8_0: quantize_q8_0(src, static_cast<BlockQ8_0*>(dst), n); return;
    case DType::kQ4_0: quantize_q4_0(src, static_cast<BlockQ4_0*>(dst), n); return;
    case DType::kQ4_K: quantize_q4_k(src, static_cast<BlockQ4K*>(dst), n); return;
    case DType::kQ5_K: quantize_q5_k(src, static_cast<BlockQ5K*>(dst), n); return;
    case DType::kQ6_K: quantize_q6_k(src, static_cast<BlockQ6K*>(dst), n); return;
    case DType::kQ8_K: quantize_q8_k(src, static_cast<BlockQ8K*>(dst), n); return;
    case DType::kQ4_1: quantize_q4_1(src, static_cast<BlockQ4_1*>(dst), n); return;
    case DType::kQ5_0: quantize_q5_0(src, static_cast<BlockQ5_0*>(dst), n); return;
    case DType::kQ5_1: quantize_q5_1(src, static_cast<BlockQ5_1*>(dst), n); return;
    case DType::kIQ4_NL: quantize_iq4_nl(src, static_cast<BlockIQ4NL*>(dst), n); return;
    case DType::kIQ4_XS: quantize_iq4_xs(src, static_cast<BlockIQ4XS*>(dst), n); return;
    case DType::kQ3_K: quantize_q3_k(src, static_cast<BlockQ3K*>(dst), n); return;
    case DType::kQ2_K: quantize_q2_k(src, static_cast<BlockQ2K*>(dst), n); return;
    case DType::kIQ2_XXS:
    case DType::kIQ2_XS:
    case DType::kIQ3_XXS:
    case DType::kIQ1_S:
    case DType::kIQ3_S:
    case DType::kIQ2_S:
    case DType::kIQ1_M: break;  // read-only: no quantizer (dtype_is_writable)
  }
  assert(false && "unknown dtype");
}

}  // namespace plimsoll::kernels
