// The grid i-quants (read-only: IQ2_XXS ...): the tables of iq_grids.h against entries read
// from ggml-common.h and their checksums, blocks built by hand as ggml's dequantize_row_*
// walk them, and the row kernels' view of a block (blocks.h's iq_group / iq_value) against
// the dequantizer on random blocks, value for value.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/half.h"
#include "kernel_test_util.h"
#include "kernels/blocks.h"
#include "kernels/iq_grids.h"

namespace plimsoll::kernels {
namespace {

template <typename T, size_t N>
uint64_t fnv1a(const T (&table)[N]) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const T& v : table) {
    for (size_t i = 0; i < sizeof(T); ++i) {
      h ^= (static_cast<uint64_t>(v) >> (8 * i)) & 0xFF;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

// Entries as ggml-common.h prints them (first, a few inside, last), and each table's checksum
// as generated from that file.
TEST(IqGrids, TablesAreGgmls) {
  EXPECT_EQ(kIQ2MaskBits[7], 128);
  EXPECT_EQ(kIQ2Signs[1], 129);
  EXPECT_EQ(kIQ2Signs[3], 3);
  EXPECT_EQ(kIQ2Signs[127], 255);
  EXPECT_EQ(kIQ2XXSGrid[0], 0x0808080808080808ull);
  EXPECT_EQ(kIQ2XXSGrid[1], 0x080808080808082bull);
  EXPECT_EQ(kIQ2XXSGrid[2], 0x0808080808081919ull);
  EXPECT_EQ(kIQ2XXSGrid[3], 0x0808080808082b08ull);
  EXPECT_EQ(kIQ2XSGrid[4], 0x0808080808082b2bull);
  EXPECT_EQ(kIQ2XSGrid[5], 0x0808080808190819ull);
  EXPECT_EQ(kIQ2SGrid[4], 0x0808080808082b2bull);
  EXPECT_EQ(kIQ2SGrid[508], 0x190808190819192bull);
  EXPECT_EQ(kIQ3XXSGrid[0], 0x04040404u);
  EXPECT_EQ(kIQ3XXSGrid[1], 0x04040414u);
  EXPECT_EQ(kIQ3XXSGrid[3], 0x04040c0cu);
  EXPECT_EQ(kIQ3XXSGrid[5], 0x04040c3eu);
  EXPECT_EQ(kIQ3SGrid[0], 0x01010101u);
  EXPECT_EQ(kIQ3SGrid[1], 0x01010103u);
  EXPECT_EQ(kIQ3SGrid[4], 0x0101010fu);
  EXPECT_EQ(kIQ3SGrid[257], 0x05090705u);
  EXPECT_EQ(kIQ3SGrid[511], 0x0f0f0101u);
  EXPECT_EQ(kIQ1SGrid[0], 0xffffffffffffffffull);
  EXPECT_EQ(kIQ1SGrid[1], 0xffffffffffffff01ull);
  EXPECT_EQ(kIQ1SGrid[2], 0xffffffffffff0000ull);
  EXPECT_EQ(kIQ1SGrid[2047], 0x0101010101010101ull);
  EXPECT_EQ(fnv1a(kIQ2MaskBits), kIQ2MaskBitsChecksum);
  EXPECT_EQ(fnv1a(kIQ2Signs), kIQ2SignsChecksum);
  EXPECT_EQ(fnv1a(kIQ2XXSGrid), kIQ2XXSGridChecksum);
  EXPECT_EQ(fnv1a(kIQ2XSGrid), kIQ2XSGridChecksum);
  EXPECT_EQ(fnv1a(kIQ2SGrid), kIQ2SGridChecksum);
  EXPECT_EQ(fnv1a(kIQ3XXSGrid), kIQ3XXSGridChecksum);
  EXPECT_EQ(fnv1a(kIQ3SGrid), kIQ3SGridChecksum);
  EXPECT_EQ(fnv1a(kIQ1SGrid), kIQ1SGridChecksum);
  // the formats' invariants: an even number of signs (bit 7 = parity of bits 0..6), IQ2 grid
  // bytes 8, 25, 43 and IQ1 grid bytes -1, 0, 1
  for (int i = 0; i < 128; ++i) EXPECT_EQ(kIQ2Signs[i], i | (__builtin_popcount(i) % 2 ? 128 : 0)) << i;
  for (uint64_t e : kIQ2XXSGrid) {
    for (int j = 0; j < 8; ++j) {
      const int b = (e >> (8 * j)) & 0xFF;
      EXPECT_TRUE(b == 8 || b == 25 || b == 43) << std::hex << e;
    }
  }
  for (uint64_t e : kIQ1SGrid) {
    for (int j = 0; j < 8; ++j) {
      const int b = (e >> (8 * j)) & 0xFF;
      EXPECT_TRUE(b == 0xFF || b == 0 || b == 1) << std::hex << e;
    }
  }
}

// ggml's dequantized value of every element is d * kIqFactor * scale * iq_value exactly (every
// product fits f32's 24 bits): the row kernels' decode is the dequantizer's, on random blocks.
template <class Block>
void expect_group_view_matches_dequantizer(DType dtype, uint32_t seed) {
  constexpr int kBlocks = 64;
  std::vector<std::byte> bytes(static_cast<size_t>(kBlocks * sizeof(Block)));
  testing::random_read_only_blocks(dtype, bytes.data(), kBlocks, seed);
  std::vector<float> y(static_cast<size_t>(kBlocks * kQKK));
  dequantize_row(dtype, bytes.data(), y.data(), kBlocks * kQKK);
  const auto* w = reinterpret_cast<const Block*>(bytes.data());
  for (int b = 0; b < kBlocks; ++b) {
    const float d = f16_to_f32(iq_super_scale(w[b]));
    for (int g = 0; g < kQKK / 32; ++g) {
      const IqGroup q = iq_group(w[b], g);
      for (int i = 0; i < 32; ++i) {
        const float want = d * kIqFactor<Block> * float(q.scale[i / 16]) * float(iq_value(q, i, kIqOneBit<Block>));
        ASSERT_EQ(y[size_t(b * kQKK + 32 * g + i)], want) << dtype_name(dtype) << " block " << b << " element " << 32 * g + i;
      }
    }
  }
}

TEST(IqGrids, RowKernelsDecodeAsTheDequantizer) {
  expect_group_view_matches_dequantizer<BlockIQ1M>(DType::kIQ1_M, 29);
  expect_group_view_matches_dequantizer<BlockIQ2S>(DType::kIQ2_S, 22);
  expect_group_view_matches_dequantizer<BlockIQ3S>(DType::kIQ3_S, 21);
  expect_group_view_matches_dequantizer<BlockIQ1S>(DType::kIQ1_S, 19);
  expect_group_view_matches_dequantizer<BlockIQ3XXS>(DType::kIQ3_XXS, 18);
  expect_group_view_matches_dequantizer<BlockIQ2XS>(DType::kIQ2_XS, 17);
  expect_group_view_matches_dequantizer<BlockIQ2XXS>(DType::kIQ2_XXS, 1);
}

// IQ2_XXS built by hand as ggml's dequantize_row_iq2_xxs walks it: per 32 elements two u32
// (the second 4 u16 of qs): the first's bytes index the grid (8 elements each), the second
// holds 4 x 7-bit sign indices and the scale in its top 4 bits; value = d * (0.5 + scale) *
// 0.25 * grid byte, negated by the sign byte's bit j. Grid entries 0..3 and sign indices 0..3
// as ggml-common.h prints them.
TEST(IqGrids, IQ2_XXSDecodesHandBuiltBlock) {
  const int grid[4][8] = {{8, 8, 8, 8, 8, 8, 8, 8}, {43, 8, 8, 8, 8, 8, 8, 8}, {25, 25, 8, 8, 8, 8, 8, 8},
                          {8, 43, 8, 8, 8, 8, 8, 8}};
  const int signs[4] = {0, 129, 130, 3};
  BlockIQ2XXS b{};
  b.d = f32_to_f16(0.5f);
  std::vector<float> want;
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux[2] = {0, 0};
    const uint32_t ls = (2 * ib + 1) % 16;
    for (int l = 0; l < 4; ++l) {
      const int gi = (ib + l) % 4, si = (ib + 2 * l) % 4;
      aux[0] |= uint32_t(gi) << (8 * l);
      aux[1] |= uint32_t(si) << (7 * l);
      for (int j = 0; j < 8; ++j) {
        const float v = 0.5f * (0.5f + float(ls)) * 0.25f * float(grid[gi][j]);
        want.push_back((signs[si] >> j) & 1 ? -v : v);
      }
    }
    aux[1] |= ls << 28;
    std::memcpy(b.qs + 4 * ib, aux, sizeof(aux));
  }
  float y[256];
  dequantize_row(DType::kIQ2_XXS, &b, y, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], want[size_t(e)]) << e;
}

// IQ2_XS built by hand as ggml's dequantize_row_iq2_xs walks it: per 8 elements a u16 of a
// 9-bit grid index and a 7-bit sign index (<< 9); per 32 elements a scales byte, its low
// nibble for the first 16, its high nibble for the next 16; value = d * (0.5 + scale) * 0.25 *
// grid byte, negated by the sign byte's bit j.
TEST(IqGrids, IQ2_XSDecodesHandBuiltBlock) {
  const int index[4] = {0, 1, 4, 5};
  const int grid[4][8] = {{8, 8, 8, 8, 8, 8, 8, 8}, {43, 8, 8, 8, 8, 8, 8, 8}, {43, 43, 8, 8, 8, 8, 8, 8},
                          {25, 8, 25, 8, 8, 8, 8, 8}};
  const int signs[4] = {0, 129, 130, 3};
  BlockIQ2XS b{};
  b.d = f32_to_f16(0.25f);
  std::vector<float> want;
  for (int ib = 0; ib < 8; ++ib) {
    b.scales[ib] = uint8_t(((ib * 3 + 1) % 16) | (((ib * 5 + 2) % 16) << 4));
    for (int l = 0; l < 4; ++l) {
      const int gi = (ib + l) % 4, si = (ib + 3 * l) % 4;
      b.qs[4 * ib + l] = uint16_t(index[gi] | (si << 9));
      const int ls = l < 2 ? b.scales[ib] & 15 : b.scales[ib] >> 4;
      for (int j = 0; j < 8; ++j) {
        const float v = 0.25f * (0.5f + float(ls)) * 0.25f * float(grid[gi][j]);
        want.push_back((signs[si] >> j) & 1 ? -v : v);
      }
    }
  }
  float y[256];
  dequantize_row(DType::kIQ2_XS, &b, y, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], want[size_t(e)]) << e;
}

// IQ3_XXS built by hand as ggml's dequantize_row_iq3_xxs walks it: 64 grid indices (4 elements
// each, two per 8 elements), then per 32 elements a u32 of 4 x 7-bit sign indices and the scale
// in its top 4 bits; value = d * (0.5 + scale) * 0.5 * grid byte, negated by the sign byte's
// bit j (bits 4..7 for the second entry of each 8).
TEST(IqGrids, IQ3_XXSDecodesHandBuiltBlock) {
  const int index[4] = {0, 1, 3, 5};
  const int grid[4][4] = {{4, 4, 4, 4}, {20, 4, 4, 4}, {12, 12, 4, 4}, {62, 12, 4, 4}};
  const int signs[4] = {0, 129, 130, 3};
  BlockIQ3XXS b{};
  b.d = f32_to_f16(0.125f);
  std::vector<float> want;
  for (int ib = 0; ib < 8; ++ib) {
    const uint32_t ls = (3 * ib + 2) % 16;
    uint32_t aux = ls << 28;
    for (int l = 0; l < 4; ++l) {
      const int g1 = (ib + l) % 4, g2 = (ib + 2 * l + 1) % 4, si = (ib + l + 1) % 4;
      b.qs[8 * ib + 2 * l] = uint8_t(index[g1]);
      b.qs[8 * ib + 2 * l + 1] = uint8_t(index[g2]);
      aux |= uint32_t(si) << (7 * l);
      for (int j = 0; j < 8; ++j) {
        const float v = 0.125f * (0.5f + float(ls)) * 0.5f * float(j < 4 ? grid[g1][j] : grid[g2][j - 4]);
        want.push_back((signs[si] >> j) & 1 ? -v : v);
      }
    }
    std::memcpy(b.qs + 64 + 4 * ib, &aux, sizeof(aux));
  }
  float y[256];
  dequantize_row(DType::kIQ3_XXS, &b, y, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], want[size_t(e)]) << e;
}

// IQ1_S built by hand as ggml's dequantize_row_iq1_s walks it: per 8 elements the low byte of an
// 11-bit grid index (entries of -1, 0, 1); per 32 elements a u16 of the 4 indices' top 3 bits,
// a 3-bit scale (bits 12..14) and the delta's sign (bit 15); value = d * (2 scale + 1) *
// (grid byte + delta), delta = -1/8 where bit 15 is set, else +1/8.
TEST(IqGrids, IQ1_SDecodesHandBuiltBlock) {
  const int index[4] = {0, 1, 2, 2047};
  const int grid[4][8] = {{-1, -1, -1, -1, -1, -1, -1, -1}, {1, -1, -1, -1, -1, -1, -1, -1},
                          {0, 0, -1, -1, -1, -1, -1, -1}, {1, 1, 1, 1, 1, 1, 1, 1}};
  BlockIQ1S b{};
  b.d = f32_to_f16(0.25f);
  std::vector<float> want;
  for (int ib = 0; ib < 8; ++ib) {
    const int ls = (ib * 5 + 3) % 8;
    const bool neg = ib % 3 == 1;
    int qh = (ls << 12) | (neg ? 0x8000 : 0);
    const float dl = 0.25f * float(2 * ls + 1), delta = neg ? -0.125f : 0.125f;
    for (int l = 0; l < 4; ++l) {
      const int gi = (ib + 3 * l) % 4;
      b.qs[4 * ib + l] = uint8_t(index[gi] & 0xFF);
      qh |= (index[gi] >> 8) << (3 * l);
      for (int j = 0; j < 8; ++j) want.push_back(dl * (float(grid[gi][j]) + delta));
    }
    b.qh[ib] = uint16_t(qh);
  }
  float y[256];
  dequantize_row(DType::kIQ1_S, &b, y, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], want[size_t(e)]) << e;
}

// IQ3_S built by hand as ggml's dequantize_row_iq3_s walks it: per 4 elements the low byte of a
// 9-bit grid index, per 32 elements a qh byte of the 8 indices' 9th bits and 4 sign bytes (bit j
// of byte l: element 8l + j negative), per 64 elements a scales byte (low nibble: the first 32);
// value = d * (1 + 2 scale) * grid byte.
TEST(IqGrids, IQ3_SDecodesHandBuiltBlock) {
  const int index[4] = {0, 1, 4, 257};
  const int grid[4][4] = {{1, 1, 1, 1}, {3, 1, 1, 1}, {15, 1, 1, 1}, {5, 7, 9, 5}};
  BlockIQ3S b{};
  b.d = f32_to_f16(0.5f);
  std::vector<float> want;
  for (int ib = 0; ib < 8; ++ib) {
    const int ls = (ib * 7 + 4) % 16;
    b.scales[ib / 2] = uint8_t(b.scales[ib / 2] | (ls << (4 * (ib % 2))));
    const float db = 0.5f * float(1 + 2 * ls);
    for (int k = 0; k < 8; ++k) {  // 4 elements each
      const int gi = (ib + 3 * k) % 4;
      b.qs[8 * ib + k] = uint8_t(index[gi] & 0xFF);
      b.qh[ib] = uint8_t(b.qh[ib] | ((index[gi] >> 8) << k));
    }
    for (int l = 0; l < 4; ++l) b.signs[4 * ib + l] = uint8_t((ib * 37 + l * 91 + 5) & 0xFF);
    for (int e = 0; e < 32; ++e) {
      const float v = db * float(grid[(ib + 3 * (e / 4)) % 4][e % 4]);
      want.push_back((b.signs[4 * ib + e / 8] >> (e % 8)) & 1 ? -v : v);
    }
  }
  float y[256];
  dequantize_row(DType::kIQ3_S, &b, y, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], want[size_t(e)]) << e;
}

// IQ2_S built by hand as ggml's dequantize_row_iq2_s walks it: per 8 elements the low byte of a
// 10-bit grid index (qs[0..31]) and a sign byte (qs[32..63]), per 32 elements a qh byte of the 4
// indices' top 2 bits and a scales byte as IQ2_XS's; value = d * (0.5 + scale) * 0.25 * grid
// byte, negated by the sign byte's bit j.
TEST(IqGrids, IQ2_SDecodesHandBuiltBlock) {
  const int index[4] = {0, 1, 4, 508};
  const int grid[4][8] = {{8, 8, 8, 8, 8, 8, 8, 8}, {43, 8, 8, 8, 8, 8, 8, 8}, {43, 43, 8, 8, 8, 8, 8, 8},
                          {43, 25, 25, 8, 25, 8, 8, 25}};
  BlockIQ2S b{};
  b.d = f32_to_f16(0.375f);
  std::vector<float> want;
  for (int ib = 0; ib < 8; ++ib) {
    b.scales[ib] = uint8_t(((ib * 5 + 3) % 16) | (((ib * 3 + 7) % 16) << 4));
    for (int l = 0; l < 4; ++l) {
      const int gi = (ib + l) % 4;
      b.qs[4 * ib + l] = uint8_t(index[gi] & 0xFF);
      b.qh[ib] = uint8_t(b.qh[ib] | ((index[gi] >> 8) << (2 * l)));
      const uint8_t signs = uint8_t((ib * 53 + l * 29 + 1) & 0xFF);
      b.qs[32 + 4 * ib + l] = signs;
      const int ls = l < 2 ? b.scales[ib] & 15 : b.scales[ib] >> 4;
      for (int j = 0; j < 8; ++j) {
        const float v = 0.375f * (0.5f + float(ls)) * 0.25f * float(grid[gi][j]);
        want.push_back((signs >> j) & 1 ? -v : v);
      }
    }
  }
  float y[256];
  dequantize_row(DType::kIQ2_S, &b, y, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], want[size_t(e)]) << e;
}

// IQ1_M built by hand as ggml's dequantize_row_iq1_m walks it: per 8 elements the low byte of an
// 11-bit index into IQ1_S's grid and a qh nibble (3 index bits, the delta's sign in bit 3); per
// 32 elements two 3-bit scales (first and second 16) in 6 bits of a u16 scale word, whose top
// nibbles hold the f16 super-scale; value = d * (2 scale + 1) * (grid byte + delta).
TEST(IqGrids, IQ1_MDecodesHandBuiltBlock) {
  const int index[4] = {0, 1, 2, 2047};
  const int grid[4][8] = {{-1, -1, -1, -1, -1, -1, -1, -1}, {1, -1, -1, -1, -1, -1, -1, -1},
                          {0, 0, -1, -1, -1, -1, -1, -1}, {1, 1, 1, 1, 1, 1, 1, 1}};
  BlockIQ1M b{};
  const uint16_t h = f32_to_f16(0.25f);
  uint16_t sc[4];
  for (int k = 0; k < 4; ++k) sc[k] = uint16_t(((h >> (4 * k)) & 0xF) << 12);
  std::vector<float> want;
  for (int ib = 0; ib < 8; ++ib) {
    const int s1 = (ib * 3 + 1) % 8, s2 = (ib * 5 + 2) % 8;
    sc[ib / 2] = uint16_t(sc[ib / 2] | ((s1 | (s2 << 3)) << (6 * (ib % 2))));
    const float dl1 = 0.25f * float(2 * s1 + 1), dl2 = 0.25f * float(2 * s2 + 1);
    for (int l = 0; l < 4; ++l) {
      const int gi = (ib + 3 * l) % 4;
      const bool neg = (ib + l) % 3 == 0;
      b.qs[4 * ib + l] = uint8_t(index[gi] & 0xFF);
      b.qh[2 * ib + l / 2] = uint8_t(b.qh[2 * ib + l / 2] | (((index[gi] >> 8) | (neg ? 8 : 0)) << (4 * (l % 2))));
      const float delta = neg ? -0.125f : 0.125f;
      for (int j = 0; j < 8; ++j) want.push_back((l < 2 ? dl1 : dl2) * (float(grid[gi][j]) + delta));
    }
  }
  std::memcpy(b.scales, sc, sizeof(sc));
  float y[256];
  dequantize_row(DType::kIQ1_M, &b, y, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], want[size_t(e)]) << e;
}

}  // namespace
}  // namespace plimsoll::kernels
