// Row codecs: exact float conversions, ggml rounding rules for Q8_0/Q4_0,
// hand-built K-quant blocks decoded from the layout spec, round-trip bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "kernels/blocks.h"
#include "kernel_test_util.h"
#include "kernels/isa_table.h"

namespace plimsoll::kernels {
namespace {

using testing::random_floats;

std::vector<std::byte> quantize(DType dtype, const std::vector<float>& x) {
  std::vector<std::byte> q(static_cast<size_t>(dtype_row_bytes(dtype, static_cast<int64_t>(x.size()))));
  quantize_row(dtype, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}
std::vector<float> dequantize(DType dtype, const std::vector<std::byte>& q, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row(dtype, q.data(), y.data(), n);
  return y;
}

TEST(Rows, F32IsCopied) {
  const std::vector<float> x = random_floats(37, 1);
  EXPECT_EQ(dequantize(DType::kF32, quantize(DType::kF32, x), 37), x);
}

TEST(Rows, F16AndBF16AreExactOnRepresentableValues) {
  // Values with <= 8 significant bits and small exponents are exact in both.
  std::vector<float> x;
  for (int i = -255; i <= 255; ++i) x.push_back(static_cast<float>(i) / 64.f);
  EXPECT_EQ(dequantize(DType::kF16, quantize(DType::kF16, x), int64_t(x.size())), x);
  EXPECT_EQ(dequantize(DType::kBF16, quantize(DType::kBF16, x), int64_t(x.size())), x);
}

TEST(Rows, F16AndBF16RoundToNearest) {
  const std::vector<float> x = random_floats(1000, 2, 10.f);
  const std::vector<float> h = dequantize(DType::kF16, quantize(DType::kF16, x), 1000);
  const std::vector<float> b = dequantize(DType::kBF16, quantize(DType::kBF16, x), 1000);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(std::fabs(h[i] - x[i]), std::fabs(x[i]) * 0x1p-11f + 0x1p-25f) << i;  // half ulp
    EXPECT_LE(std::fabs(b[i] - x[i]), std::fabs(x[i]) * 0x1p-8f) << i;
    EXPECT_EQ(bits_from_f32(b[i]) & 0xffffu, 0u);
  }
}

TEST(Rows, Q8_0FollowsGgmlReference) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[size_t(i)] = static_cast<float>(i - 16) * 0.25f;  // amax 4 at i=0
  const std::vector<std::byte> q = quantize(DType::kQ8_0, x);
  BlockQ8_0 b;
  std::memcpy(&b, q.data(), sizeof(b));
  EXPECT_EQ(b.d, f32_to_f16(4.f / 127.f));
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(b.qs[i], static_cast<int8_t>(std::round(x[size_t(i)] * (127.f / 4.f)))) << i;
  }
  EXPECT_EQ(b.qs[0], -127);
}

TEST(Rows, Q4_0FollowsGgmlReference) {
  // The signed max is -3 (element 5): d = -3 / -8, so -3 maps to nibble 0.
  std::vector<float> x(32, 0.f);
  x[5] = -3.f;
  x[20] = 2.f;
  x[31] = 0.375f;
  const std::vector<std::byte> q = quantize(DType::kQ4_0, x);
  BlockQ4_0 b;
  std::memcpy(&b, q.data(), sizeof(b));
  EXPECT_EQ(f16_to_f32(b.d), 0.375f);
  EXPECT_EQ(b.qs[5] & 0xF, 0);             // element 5: low nibble of byte 5
  EXPECT_EQ(b.qs[4] >> 4, 13);             // element 20: high nibble of byte 4: 2/0.375+8.5 = 13.83
  EXPECT_EQ(b.qs[15] >> 4, 9);             // element 31: 1 + 8
  EXPECT_EQ(b.qs[0] & 0xF, 8);             // zero
  const std::vector<float> y = dequantize(DType::kQ4_0, q, 32);
  EXPECT_EQ(y[5], -3.f);
  EXPECT_EQ(y[20], 5 * 0.375f);
  EXPECT_EQ(y[31], 0.375f);
}

// Independent packer for the 12-byte 6-bit scale/min table, from the layout:
// bytes 0..3: sc[0..3] | (sc[4..7] >> 4) << 6; bytes 4..7: m[0..3] | (m[4..7] >> 4) << 6;
// bytes 8..11: (sc[4..7] & 15) | (m[4..7] & 15) << 4.
std::array<uint8_t, 12> pack_k4(const int* sc, const int* m) {
  std::array<uint8_t, 12> p{};
  for (int j = 0; j < 4; ++j) {
    p[size_t(j)] = uint8_t(sc[j] | ((sc[j + 4] >> 4) << 6));
    p[size_t(j + 4)] = uint8_t(m[j] | ((m[j + 4] >> 4) << 6));
    p[size_t(j + 8)] = uint8_t((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
  return p;
}

constexpr int kSc[8] = {1, 17, 33, 63, 5, 40, 22, 61};
constexpr int kMin[8] = {0, 63, 12, 7, 50, 3, 33, 16};
int level4(int e) { return (e * 7 + 3) % 16; }
int level5(int e) { return (e * 11 + 5) % 32; }
int level6(int e) { return (e * 13 + 1) % 64; }

TEST(Rows, Q4_KDecodesHandBuiltBlock) {
  BlockQ4K b{};
  b.d = f32_to_f16(0.5f);
  b.dmin = f32_to_f16(0.25f);
  const auto packed = pack_k4(kSc, kMin);
  std::memcpy(b.scales, packed.data(), 12);
  for (int e = 0; e < 256; ++e) {  // 64-element group g: bytes 32g..; low nibbles first
    const int g = e / 64, l = e % 32;
    b.qs[32 * g + l] |= uint8_t((e % 64) < 32 ? level4(e) : level4(e) << 4);
  }
  float y[256];
  dequantize_row(DType::kQ4_K, &b, y, 256);
  for (int e = 0; e < 256; ++e) {
    const float want = 0.5f * float(kSc[e / 32]) * float(level4(e)) - 0.25f * float(kMin[e / 32]);
    EXPECT_FLOAT_EQ(y[e], want) << e;
  }
}

TEST(Rows, Q5_KDecodesHandBuiltBlock) {
  BlockQ5K b{};
  b.d = f32_to_f16(0.125f);
  b.dmin = f32_to_f16(1.5f);
  const auto packed = pack_k4(kSc, kMin);
  std::memcpy(b.scales, packed.data(), 12);
  for (int e = 0; e < 256; ++e) {
    const int g = e / 64, l = e % 32, upper = (e % 64) >= 32, q = level5(e);
    b.qs[32 * g + l] |= uint8_t(upper ? (q & 15) << 4 : (q & 15));
    if (q & 16) b.qh[l] |= uint8_t(1 << (2 * g + upper));
  }
  float y[256];
  dequantize_row(DType::kQ5_K, &b, y, 256);
  for (int e = 0; e < 256; ++e) {
    const float want = 0.125f * float(kSc[e / 32]) * float(level5(e)) - 1.5f * float(kMin[e / 32]);
    EXPECT_FLOAT_EQ(y[e], want) << e;
  }
}

TEST(Rows, Q6_KDecodesHandBuiltBlock) {
  BlockQ6K b{};
  b.d = f32_to_f16(0.0625f);
  for (int g = 0; g < 16; ++g) b.scales[g] = int8_t(g * 17 - 128);
  for (int e = 0; e < 256; ++e) {
    // half h of 128: quarter k (32 each); ql byte l + 32*(k&1), low nibble for k<2;
    // qh byte l holds the 2 high bits of quarter k at bits 2k.
    const int h = e / 128, k = (e % 128) / 32, l = e % 32, q = level6(e);
    uint8_t& lo = b.ql[64 * h + 32 * (k & 1) + l];
    lo |= uint8_t(k < 2 ? (q & 15) : (q & 15) << 4);
    b.qh[32 * h + l] |= uint8_t((q >> 4) << (2 * k));
  }
  float y[256];
  dequantize_row(DType::kQ6_K, &b, y, 256);
  for (int e = 0; e < 256; ++e) {
    const float want = 0.0625f * float(b.scales[e / 16]) * float(level6(e) - 32);
    EXPECT_FLOAT_EQ(y[e], want) << e;
  }
}

// The 32-element blocks past Q4_0, built by hand from ggml-common.h's layout: element i < 16
// in the low nibble of qs[i], i >= 16 in the high nibble of qs[i - 16], the 5th bit of
// element i in bit i of qh (little-endian), IQ4_NL's nibble an index into kvalues_iq4nl.
TEST(Rows, Q4_1Q5_0Q5_1AndIQ4_NLDecodeHandBuiltBlocks) {
  const float d = 0.25f, m = -1.5f;
  auto q5 = [](int i) { return (i * 7 + 3) % 32; };  // a 5-bit value per element
  BlockQ4_1 a{};
  BlockQ5_0 b{};
  BlockQ5_1 c{};
  BlockIQ4NL n{};
  a.d = b.d = c.d = n.d = f32_to_f16(d);
  a.m = c.m = f32_to_f16(m);
  uint32_t qh = 0;
  for (int i = 0; i < 32; ++i) {
    const int shift = i < 16 ? 0 : 4;
    a.qs[i % 16] |= uint8_t((q5(i) & 15) << shift);
    b.qs[i % 16] |= uint8_t((q5(i) & 15) << shift);
    c.qs[i % 16] |= uint8_t((q5(i) & 15) << shift);
    n.qs[i % 16] |= uint8_t((q5(i) & 15) << shift);
    qh |= uint32_t(q5(i) >> 4) << i;
  }
  std::memcpy(b.qh, &qh, 4);
  std::memcpy(c.qh, &qh, 4);
  float ya[32], yb[32], yc[32], yn[32];
  dequantize_row(DType::kQ4_1, &a, ya, 32);
  dequantize_row(DType::kQ5_0, &b, yb, 32);
  dequantize_row(DType::kQ5_1, &c, yc, 32);
  dequantize_row(DType::kIQ4_NL, &n, yn, 32);
  const int8_t table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(ya[i], float(q5(i) & 15) * d + m) << i;
    EXPECT_EQ(yb[i], float(q5(i) - 16) * d) << i;
    EXPECT_EQ(yc[i], float(q5(i)) * d + m) << i;
    EXPECT_EQ(yn[i], float(table[q5(i) & 15]) * d) << i;
  }
}

// IQ4_XS: 8 blocks of 32 with 6-bit scales (low 4 bits: nibble b % 2 of scales_l[b / 2],
// high 2: bits 2b, 2b+1 of scales_h), each block's nibbles as IQ4_NL's; value =
// d * (scale - 32) * kvalues_iq4nl[nibble].
TEST(Rows, IQ4_XSDecodesHandBuiltBlock) {
  BlockIQ4XS b{};
  b.d = f32_to_f16(0.125f);
  const int scale[8] = {0, 63, 32, 31, 17, 48, 5, 40};
  for (int k = 0; k < 8; ++k) {
    b.scales_l[k / 2] |= uint8_t((scale[k] & 15) << (4 * (k % 2)));
    b.scales_h = uint16_t(b.scales_h | ((scale[k] >> 4) << (2 * k)));
  }
  auto idx = [](int e) { return (e * 5 + e / 32) % 16; };
  for (int e = 0; e < 256; ++e) {
    const int k = e / 32, i = e % 32;
    b.qs[16 * k + i % 16] |= uint8_t(idx(e) << (i < 16 ? 0 : 4));
  }
  float y[256];
  dequantize_row(DType::kIQ4_XS, &b, y, 256);
  for (int e = 0; e < 256; ++e) {
    EXPECT_EQ(y[e], 0.125f * float(scale[e / 32] - 32) * float(kIQ4NLValues[idx(e)])) << e;
  }
}

// Q3_K, built by hand as ggml's dequantize_row_q3_K walks it: per half (128 elements, qs[32h..])
// and shift 2j (j = 0..3), 16 elements from qs[l] and 16 from qs[l + 16], the high bit from
// hmask[l] bit 4h + j (clear: -4), and the next scale for each 16; scales as 16 six-bit values
// (low nibbles in scales[0..7], low then high nibble; high 2 bits in scales[8..11]).
TEST(Rows, Q3_KDecodesHandBuiltBlock) {
  BlockQ3K b{};
  b.d = f32_to_f16(0.5f);
  int sc[16];
  for (int j = 0; j < 16; ++j) {
    sc[j] = (j * 23 + 5) % 64;
    if (j < 8) b.scales[j] |= uint8_t(sc[j] & 15);
    else b.scales[j - 8] |= uint8_t((sc[j] & 15) << 4);
    b.scales[8 + j % 4] |= uint8_t((sc[j] >> 4) << (2 * (j / 4)));
  }
  auto value = [](int e) { return (e * 5 + e / 7) % 8 - 4; };  // -4..3
  std::vector<float> want;
  int is = 0;
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 4; ++j) {
      for (int half = 0; half < 2; ++half, ++is) {
        for (int l = 0; l < 16; ++l) {
          const int e = int(want.size()), i = l + 16 * half;
          const int v = value(e) + 4;  // 0..7: bit 2 the high bit, set for v >= 4
          b.qs[32 * h + i] |= uint8_t((v & 3) << (2 * j));
          if (v >= 4) b.hmask[i] |= uint8_t(1 << (4 * h + j));
          want.push_back(0.5f * float(sc[is] - 32) * float(value(e)));
        }
      }
    }
  }
  float y[256];
  dequantize_row(DType::kQ3_K, &b, y, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], want[size_t(e)]) << e;
}

// Q2_K, built by hand as ggml's dequantize_row_q2_K walks it: per half (qs[32h..]) and shift
// 2j, 16 elements from qs[l] and 16 from qs[l + 16], each 16 with the next scales byte (scale
// in the low nibble, min in the high): d * scale * q - dmin * min.
TEST(Rows, Q2_KDecodesHandBuiltBlock) {
  BlockQ2K b{};
  b.d = f32_to_f16(0.5f);
  b.dmin = f32_to_f16(0.25f);
  for (int j = 0; j < 16; ++j) b.scales[j] = uint8_t(((j * 7 + 2) % 16) | (((j * 5 + 1) % 16) << 4));
  auto value = [](int e) { return (e * 3 + e / 9) % 4; };
  std::vector<float> want;
  int is = 0;
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 4; ++j) {
      for (int half = 0; half < 2; ++half, ++is) {
        for (int l = 0; l < 16; ++l) {
          const int e = int(want.size());
          b.qs[32 * h + l + 16 * half] |= uint8_t(value(e) << (2 * j));
          want.push_back(0.5f * float(b.scales[is] & 15) * float(value(e)) - 0.25f * float(b.scales[is] >> 4));
        }
      }
    }
  }
  float y[256];
  dequantize_row(DType::kQ2_K, &b, y, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], want[size_t(e)]) << e;
}

// Round trip: max error per element relative to the block's max |x|.
//   Q8_0: half a step of amax/127 plus f16 rounding of d -> 0.0045
//   Q4_0: the signed max sits at -8, so the other sign clips at +7 steps of
//         amax/8: up to a full step of amax/8                -> 0.125 (+ f16)
//   Q8_K: half a step of amax/127 (f32 d)                    -> 0.004
//   RMS bounds (relative to RMS of x, Gaussian data): a uniform error of one
//   step/sqrt(12) with amax ~2.1 sigma (32) or ~3.3 sigma (256).
//   Q4_K/Q5_K/Q6_K: scales are themselves quantized, so we bound the RMS error
//   relative to the RMS of x instead: 4 bits ~0.09, 5 bits ~0.045, 6 bits ~0.02
//   (llama.cpp's reference quantizers on Gaussian data land around 0.07/0.035/0.017).
//   Q4_1 / Q5_1: half a step of (max - min) / 15 or 31 plus f16 rounding of d and m
//         -> 0.07 / 0.035 [measured 0.0667 / 0.0321; RMS 0.077 / 0.037]
//   Q5_0: as Q4_0 with steps of amax/16                      -> 0.065 [0.059; RMS 0.042]
//   IQ4_NL: half the widest gap of its table (24 of 127) at the fitted scale
//         -> 0.12 [0.108; RMS 0.078]; IQ4_XS: its block scales are 6-bit, so as the
//         K-quants a looser max and the RMS bound [0.075; RMS 0.075].
//   Q3_K: 8 levels per 16 values, 6-bit signed scales: RMS ~2x Q4_K's [0.150].
//   Q2_K: 4 levels per 16 values with a min, 4-bit scales and mins: ~2x Q3_K's [0.292].
TEST(Rows, RoundTripErrorBounds) {
  struct Case { DType dtype; double max_rel; double rms_rel; };
  const Case cases[] = {{DType::kQ8_0, 0.0045, 0.006},  {DType::kQ4_0, 0.126, 0.09},
                        {DType::kQ8_K, 0.004, 0.008},   {DType::kQ4_K, 1.0, 0.09},
                        {DType::kQ5_K, 1.0, 0.045},     {DType::kQ6_K, 1.0, 0.02},
                        {DType::kQ4_1, 0.07, 0.085},    {DType::kQ5_0, 0.065, 0.046},
                        {DType::kQ5_1, 0.035, 0.041},   {DType::kIQ4_NL, 0.12, 0.086},
                        {DType::kIQ4_XS, 0.15, 0.083},  {DType::kQ3_K, 1.0, 0.165},
                        {DType::kQ2_K, 1.0, 0.32}};
  for (const Case& c : cases) {
    const int64_t n = 4096;
    const int64_t block = dtype_traits(c.dtype).block_elems;
    const std::vector<float> x = random_floats(n, 7);
    const std::vector<float> y = dequantize(c.dtype, quantize(c.dtype, x), n);
    double err2 = 0, x2 = 0;
    for (int64_t b0 = 0; b0 < n; b0 += block) {
      double amax = 0;
      for (int64_t i = b0; i < b0 + block; ++i) amax = std::max(amax, std::fabs(double(x[size_t(i)])));
      for (int64_t i = b0; i < b0 + block; ++i) {
        const double e = std::fabs(double(y[size_t(i)]) - x[size_t(i)]);
        EXPECT_LE(e, c.max_rel * amax) << dtype_name(c.dtype) << " element " << i;
        err2 += e * e;
        x2 += double(x[size_t(i)]) * x[size_t(i)];
      }
    }
    EXPECT_LE(std::sqrt(err2 / x2), c.rms_rel) << dtype_name(c.dtype);
  }
}

TEST(Rows, ZeroRowsStayZero) {
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kQ8_K,
                      DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL, DType::kIQ4_XS, DType::kQ3_K, DType::kQ2_K}) {
    const std::vector<float> x(512, 0.f);
    const std::vector<float> y = dequantize(dtype, quantize(dtype, x), 512);
    for (float v : y) ASSERT_EQ(v, 0.f) << dtype_name(dtype);
  }
}

}  // namespace
}  // namespace plimsoll::kernels

namespace plimsoll::kernels {
namespace {

// The activation quantizers of every ISA table equal the scalar codecs byte for
// byte: random rows, an all-zero block, halves that round away (Q8_0) or to even
// (Q8_K), and a largest magnitude that appears first as a negative.
TEST(Rows, ActivationQuantizersMatchScalarBytesOnEveryIsa) {
  const int64_t n = 4 * 256;
  std::vector<float> x = random_floats(n, 77, 3.f);
  for (int64_t i = 256; i < 512; ++i) x[static_cast<size_t>(i)] = 0.f;                 // zero super-block
  // scale 1 (Q8_0 blocks and the Q8_K super-block start with 127): every value a tie
  for (int64_t i = 512; i < 768; ++i) x[static_cast<size_t>(i)] = i % 32 == 0 ? 127.f : float(i % 9 - 4) + 0.5f;
  x[800] = -8.f;
  x[900] = 8.f;  // after the negative of the same magnitude
  for (DType a : {DType::kQ8_0, DType::kQ8_K}) {
    std::vector<std::byte> want(static_cast<size_t>(dtype_row_bytes(a, n)));
    quantize_row(a, x.data(), want.data(), n);
    for (Isa isa : testing::available_isas()) {
      const IsaTable& t = isa_table(isa);
      std::vector<std::byte> got(want.size(), std::byte{0x55});
      if (a == DType::kQ8_0) {
        t.quantize_q8_0(x.data(), reinterpret_cast<BlockQ8_0*>(got.data()), n);
      } else {
        t.quantize_q8_k(x.data(), reinterpret_cast<BlockQ8K*>(got.data()), n);
      }
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i], want[i]) << dtype_name(a) << " " << isa_name(isa) << " byte " << i;
      }
    }
  }
}

}  // namespace
}  // namespace plimsoll::kernels
