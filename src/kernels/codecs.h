// Per-dtype row codecs (quantize / dequantize n elements), the scalar
// definitions that kernels.cpp's quantize_row / dequantize_row dispatch to.
#pragma once

#include <cstdint>

#include "kernels/blocks.h"

namespace plimsoll::kernels {

// n: elements, a multiple of the block size. dst/src: n / block_elems blocks.
void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t n);
void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t n);
void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t n);
void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t n);
void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t n);
void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t n);
void dequantize_q5_0(const BlockQ5_0* x, float* y, int64_t n);
void quantize_q5_1(const float* x, BlockQ5_1* y, int64_t n);
void dequantize_q5_1(const BlockQ5_1* x, float* y, int64_t n);
// IQ4_NL / IQ4_XS (scalar/quant_iq4.cpp): ggml's quantize_row_iq4_nl_ref / quantize_row_iq4_xs_ref
// (no importance weights).
void quantize_iq4_nl(const float* x, BlockIQ4NL* y, int64_t n);
void dequantize_iq4_nl(const BlockIQ4NL* x, float* y, int64_t n);
void quantize_iq4_xs(const float* x, BlockIQ4XS* y, int64_t n);
void dequantize_iq4_xs(const BlockIQ4XS* x, float* y, int64_t n);
// The grid i-quants (scalar/quant_iq_grid.cpp): dequantizers only, bit for bit ggml's
// dequantize_row_*; read-only (ggml's quantizers need an importance matrix).
void dequantize_iq2_xxs(const BlockIQ2XXS* x, float* y, int64_t n);
void dequantize_iq2_xs(const BlockIQ2XS* x, float* y, int64_t n);
void dequantize_iq3_xxs(const BlockIQ3XXS* x, float* y, int64_t n);
void dequantize_iq1_s(const BlockIQ1S* x, float* y, int64_t n);
void dequantize_iq3_s(const BlockIQ3S* x, float* y, int64_t n);
void dequantize_iq2_s(const BlockIQ2S* x, float* y, int64_t n);
void dequantize_iq1_m(const BlockIQ1M* x, float* y, int64_t n);

void quantize_q2_k(const float* x, BlockQ2K* y, int64_t n);
void dequantize_q2_k(const BlockQ2K* x, float* y, int64_t n);
void quantize_q3_k(const float* x, BlockQ3K* y, int64_t n);  // scalar/quant_q3k.cpp
void dequantize_q3_k(const BlockQ3K* x, float* y, int64_t n);
void quantize_q4_k(const float* x, BlockQ4K* y, int64_t n);
void dequantize_q4_k(const BlockQ4K* x, float* y, int64_t n);
void quantize_q5_k(const float* x, BlockQ5K* y, int64_t n);
void dequantize_q5_k(const BlockQ5K* x, float* y, int64_t n);
void quantize_q6_k(const float* x, BlockQ6K* y, int64_t n);
void dequantize_q6_k(const BlockQ6K* x, float* y, int64_t n);
void quantize_q8_k(const float* x, BlockQ8K* y, int64_t n);
void dequantize_q8_k(const BlockQ8K* x, float* y, int64_t n);

}  // namespace plimsoll::kernels
