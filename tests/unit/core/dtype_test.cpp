#include "core/dtype.h"

#include <gtest/gtest.h>

#include "core/half.h"

namespace plimsoll {
namespace {

TEST(DType, GeometryMatchesGgml) {
  EXPECT_EQ(dtype_row_bytes(DType::kQ8_0, 64), 68);
  EXPECT_EQ(dtype_row_bytes(DType::kQ4_0, 64), 36);
  EXPECT_EQ(dtype_row_bytes(DType::kQ4_K, 512), 288);
  EXPECT_EQ(dtype_row_bytes(DType::kQ6_K, 256), 210);
  EXPECT_EQ(dtype_row_bytes(DType::kF16, 10), 20);
  EXPECT_EQ(dtype_from_ggml(8), DType::kQ8_0);
  EXPECT_EQ(dtype_from_ggml(30), DType::kBF16);
  EXPECT_FALSE(dtype_from_ggml(9).has_value());  // Q8_1: not supported
  // the GGUF ids and block geometry of ggml-common.h
  EXPECT_EQ(dtype_from_ggml(3), DType::kQ4_1);
  EXPECT_EQ(dtype_from_ggml(6), DType::kQ5_0);
  EXPECT_EQ(dtype_from_ggml(7), DType::kQ5_1);
  EXPECT_EQ(dtype_from_ggml(20), DType::kIQ4_NL);
  EXPECT_EQ(dtype_from_ggml(23), DType::kIQ4_XS);
  EXPECT_EQ(dtype_from_ggml(11), DType::kQ3_K);
  EXPECT_EQ(dtype_row_bytes(DType::kQ3_K, 512), 220);
  EXPECT_EQ(dtype_from_ggml(10), DType::kQ2_K);
  EXPECT_EQ(dtype_row_bytes(DType::kQ2_K, 512), 168);
  EXPECT_EQ(dtype_row_bytes(DType::kQ4_1, 64), 40);
  EXPECT_EQ(dtype_row_bytes(DType::kQ5_0, 64), 44);
  EXPECT_EQ(dtype_row_bytes(DType::kQ5_1, 64), 48);
  EXPECT_EQ(dtype_row_bytes(DType::kIQ4_NL, 64), 36);
  EXPECT_EQ(dtype_row_bytes(DType::kIQ4_XS, 512), 272);
  EXPECT_EQ(dtype_from_name("IQ4_XS"), DType::kIQ4_XS);
  EXPECT_EQ(dtype_from_name("Q4_K"), DType::kQ4_K);
  EXPECT_FALSE(dtype_from_name("q8_1").has_value());
  // the read-only grid i-quants (no quantizer)
  EXPECT_EQ(dtype_from_ggml(16), DType::kIQ2_XXS);
  EXPECT_EQ(dtype_row_bytes(DType::kIQ2_XXS, 512), 132);
  EXPECT_EQ(dtype_from_name("IQ2_XXS"), DType::kIQ2_XXS);
  EXPECT_FALSE(dtype_is_writable(DType::kIQ2_XXS));
  EXPECT_EQ(dtype_from_ggml(17), DType::kIQ2_XS);
  EXPECT_EQ(dtype_row_bytes(DType::kIQ2_XS, 512), 148);
  EXPECT_EQ(dtype_from_name("IQ2_XS"), DType::kIQ2_XS);
  EXPECT_FALSE(dtype_is_writable(DType::kIQ2_XS));
  EXPECT_EQ(dtype_from_ggml(18), DType::kIQ3_XXS);
  EXPECT_EQ(dtype_row_bytes(DType::kIQ3_XXS, 512), 196);
  EXPECT_EQ(dtype_from_name("IQ3_XXS"), DType::kIQ3_XXS);
  EXPECT_FALSE(dtype_is_writable(DType::kIQ3_XXS));
  EXPECT_EQ(dtype_from_ggml(19), DType::kIQ1_S);
  EXPECT_EQ(dtype_row_bytes(DType::kIQ1_S, 512), 100);
  EXPECT_EQ(dtype_from_name("IQ1_S"), DType::kIQ1_S);
  EXPECT_FALSE(dtype_is_writable(DType::kIQ1_S));
  EXPECT_EQ(dtype_from_ggml(21), DType::kIQ3_S);
  EXPECT_EQ(dtype_row_bytes(DType::kIQ3_S, 512), 220);
  EXPECT_EQ(dtype_from_name("IQ3_S"), DType::kIQ3_S);
  EXPECT_FALSE(dtype_is_writable(DType::kIQ3_S));
  EXPECT_EQ(dtype_from_ggml(22), DType::kIQ2_S);
  EXPECT_EQ(dtype_row_bytes(DType::kIQ2_S, 512), 164);
  EXPECT_EQ(dtype_from_name("IQ2_S"), DType::kIQ2_S);
  EXPECT_FALSE(dtype_is_writable(DType::kIQ2_S));
  EXPECT_EQ(dtype_from_ggml(29), DType::kIQ1_M);
  EXPECT_EQ(dtype_row_bytes(DType::kIQ1_M, 512), 112);
  EXPECT_EQ(dtype_from_name("IQ1_M"), DType::kIQ1_M);
  EXPECT_FALSE(dtype_is_writable(DType::kIQ1_M));
  EXPECT_FALSE(dtype_is_writable(DType::kQ8_K));
  EXPECT_TRUE(dtype_is_writable(DType::kIQ4_XS));
}

TEST(Half, F16RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = f16_to_f32(bits);
    if (f != f) continue;  // NaN payloads need not round-trip exactly
    EXPECT_EQ(f32_to_f16(f), bits) << "half bits " << h;
  }
}

TEST(Half, F16RoundsToNearestEven) {
  // 1 + 2^-11 lies exactly between 1 and the next half (1 + 2^-10): ties to even -> 1.
  EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);
  EXPECT_EQ(f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);
  EXPECT_EQ(f32_to_f16(70000.0f), 0x7c00);  // overflow to +inf
  EXPECT_EQ(f32_to_f16(5.9604645e-08f), 0x0001);  // smallest subnormal
}

TEST(Half, Bf16) {
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.5f)), 1.5f);
  EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
}

}  // namespace
}  // namespace plimsoll
