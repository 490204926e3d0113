// Block layouts of the quantized dtypes, byte-for-byte as ggml/llama.cpp stores
// them in GGUF (ggml-common.h), plus the small helpers every codec shares.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/iq_grids.h"

namespace plimsoll::kernels {

inline constexpr int kQK = 32;    // elements per Q8_0 / Q4_0 block
inline constexpr int kQKK = 256;  // elements per K-quant super-block

struct BlockQ8_0 {
  uint16_t d;          // f16 scale
  int8_t qs[kQK];      // value = qs[i] * d
};
struct BlockQ4_0 {
  uint16_t d;          // f16 scale
  uint8_t qs[kQK / 2]; // element i < 16: low nibble of qs[i]; i >= 16: high nibble of qs[i-16]
};                     // value = (nibble - 8) * d
struct BlockQ2K {
  uint8_t scales[kQKK / 16];  // per 16 elements: scale in the low nibble, min in the high
  uint8_t qs[kQKK / 4];       // element 128h + 32j + l: bits 2j of qs[32h + l] (as Q3_K's low bits)
  uint16_t d;                 // f16 super-scale of the scales
  uint16_t dmin;              // f16 super-scale of the mins
};                            // value = d * scale * q - dmin * min
struct BlockQ3K {
  uint8_t hmask[kQKK / 8];  // high bit of element e: bit e / 32 of hmask[e % 32]
  uint8_t qs[kQKK / 4];     // low 2 bits of element 128h + 32j + l: bits 2j of qs[32h + l]
  uint8_t scales[12];       // 16 six-bit scales (see q3k_scale), offset 32
  uint16_t d;               // f16 super-scale
};                          // value = d * (scale[e / 16] - 32) * (low 2 bits - (high bit ? 0 : 4))
struct BlockQ4K {
  uint16_t d;          // f16 super-scale of the 6-bit sub-block scales
  uint16_t dmin;       // f16 super-scale of the 6-bit sub-block mins
  uint8_t scales[12];  // 8 scales + 8 mins, 6 bits each (see scale_min_k4)
  uint8_t qs[kQKK / 2];// 64-element groups: 32 bytes, low nibbles first 32, high next 32
};                     // value = d*sc[j]*q - dmin*m[j], j = element / 32
struct BlockQ5K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];  // 5th bit: element 64g + l (l<32) -> bit 2g of qh[l]; +32 -> bit 2g+1
  uint8_t qs[kQKK / 2];  // low 4 bits, as Q4_K
};
struct BlockQ6K {
  uint8_t ql[kQKK / 2];   // low 4 bits
  uint8_t qh[kQKK / 4];   // high 2 bits
  int8_t scales[kQKK / 16];  // per 16 elements
  uint16_t d;             // f16 super-scale
};                        // value = d * scales[e/16] * (q - 32)
// The 32-element block types past Q4_0 (ggml's block_q4_1, block_q5_0, block_q5_1,
// block_iq4_nl): element i < 16 is the low nibble of qs[i], i >= 16 the high nibble of
// qs[i - 16]; Q5's 5th bit of element i is bit i of qh (little-endian 32 bits).
struct BlockQ4_1 {
  uint16_t d;           // f16 scale
  uint16_t m;           // f16 min
  uint8_t qs[kQK / 2];  // value = nibble * d + m
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];  // value = ((nibble | 5th bit << 4) - 16) * d
};
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];  // value = (nibble | 5th bit << 4) * d + m
};
struct BlockIQ4NL {
  uint16_t d;
  uint8_t qs[kQK / 2];  // value = kIQ4NLValues[nibble] * d
};
// ggml's block_iq4_xs: 8 blocks of 32 with IQ4_NL's table, each with a 6-bit scale
// (low 4 bits: nibble b % 2 of scales_l[b / 2]; high 2 bits: bits 2b..2b+1 of scales_h).
struct BlockIQ4XS {
  uint16_t d;             // f16 super-scale
  uint16_t scales_h;
  uint8_t scales_l[kQKK / 64];
  uint8_t qs[kQKK / 2];   // block b: qs[16b..16b+15] as IQ4_NL's nibbles
};                        // value = d * (scale[b] - 32) * kIQ4NLValues[nibble]

// The grid i-quants (ggml's block_iq2_xxs ... block_iq1_m): super-blocks of 256 whose
// values come 8 (or 4) at a time from a fixed grid (iq_grids.h), with signs, 3- or
// 4-bit scales and an f16 super-scale. Read-only here: ggml's quantizers for them need
// an importance matrix and a search over grid neighbours.
struct BlockIQ2XXS {
  uint16_t d;                // f16 super-scale
  uint16_t qs[kQKK / 8];     // per 32 elements 4 x u16: bytes 0..3 index kIQ2XXSGrid (8 elements
};                           // each); the 2nd u32: 4 x 7-bit kIQ2Signs indices, then a 4-bit scale
struct BlockIQ2XS {
  uint16_t d;
  uint16_t qs[kQKK / 8];     // per 8 elements: 9-bit kIQ2XSGrid index | 7-bit kIQ2Signs index << 9
  uint8_t scales[kQKK / 32]; // per 32 elements: 4-bit scales of the first and second 16
};
struct BlockIQ2S {
  uint16_t d;
  uint8_t qs[kQKK / 4];      // 32 low bytes of the 10-bit kIQ2SGrid indices, then 32 sign bytes
  uint8_t qh[kQKK / 32];     // per 32 elements: the indices' top 2 bits (2 per 8 elements)
  uint8_t scales[kQKK / 32]; // as IQ2_XS
};
struct BlockIQ3XXS {
  uint16_t d;
  uint8_t qs[3 * kQKK / 8];  // 64 kIQ3XXSGrid indices (4 elements each), then per 32 elements
};                           // a u32 of 4 x 7-bit kIQ2Signs indices and a 4-bit scale
struct BlockIQ3S {
  uint16_t d;
  uint8_t qs[kQKK / 4];      // low bytes of the 9-bit kIQ3SGrid indices (4 elements each)
  uint8_t qh[kQKK / 32];     // per 32 elements: the 8 indices' 9th bits
  uint8_t signs[kQKK / 8];   // bit i: element i negative
  uint8_t scales[kQKK / 64]; // per 32 elements a 4-bit scale
};
struct BlockIQ1S {
  uint16_t d;
  uint8_t qs[kQKK / 8];      // low bytes of the 11-bit kIQ1SGrid indices (8 elements each)
  uint16_t qh[kQKK / 32];    // per 32 elements: 4 x 3 index bits, a 3-bit scale, the delta's sign
};
struct BlockIQ1M {
  uint8_t qs[kQKK / 8];      // as IQ1_S
  uint8_t qh[kQKK / 16];     // per 8 elements a nibble: 3 index bits and the delta's sign
  uint8_t scales[kQKK / 32]; // per 16 elements a 3-bit scale; the f16 super-scale in the top
};                           // nibbles of the 4 u16 words

// IQ4_NL / IQ4_XS's 16 values (ggml's kvalues_iq4nl: format data).
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

struct BlockQ8K {
  float d;                // f32 scale
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];  // sums of qs per 16 elements
};

static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4K) == 144);
static_assert(sizeof(BlockQ5K) == 176);
static_assert(sizeof(BlockQ6K) == 210);
static_assert(sizeof(BlockQ8K) == 292);
static_assert(sizeof(BlockQ2K) == 84);
static_assert(sizeof(BlockQ3K) == 110);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockIQ4NL) == 18);
static_assert(sizeof(BlockIQ4XS) == 136);
static_assert(sizeof(BlockIQ2XXS) == 66);
static_assert(sizeof(BlockIQ2XS) == 74);
static_assert(sizeof(BlockIQ2S) == 82);
static_assert(sizeof(BlockIQ3XXS) == 98);
static_assert(sizeof(BlockIQ3S) == 110);
static_assert(sizeof(BlockIQ1S) == 50);
static_assert(sizeof(BlockIQ1M) == 56);

// Sub-block b (0..7) scale of an IQ4_XS super-block, 0..63 (the weight scale is d * (this - 32)).
static inline int iq4xs_scale(const BlockIQ4XS& x, int b) {
  return ((x.scales_l[b / 2] >> (4 * (b % 2))) & 0xF) | (((x.scales_h >> (2 * b)) & 3) << 4);
}
// Scale j (0..15) of a Q3_K super-block, 0..63 (the weight scale is d * (this - 32)): low 4
// bits in nibble j / 8 of scales[j % 8], high 2 bits at bits 2 (j / 4) of scales[8 + j % 4].
static inline int q3k_scale(const BlockQ3K& x, int j) {
  const int low = j < 8 ? (x.scales[j] & 0xF) : (x.scales[j - 8] >> 4);
  return low | (((x.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
}
// Element e (0..255) of a Q2_K super-block, 0..3.
static inline int q2k_value(const BlockQ2K& x, int e) {
  return (x.qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
}
// Element e (0..255) of a Q3_K super-block, -4..3.
static inline int q3k_value(const BlockQ3K& x, int e) {
  const int q = (x.qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
  return q - (((x.hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4);
}
// Q5_0 / Q5_1's 32 fifth bits.
static inline uint32_t q5_high_bits(const uint8_t (&qh)[4]) {
  uint32_t h;
  std::memcpy(&h, qh, sizeof(h));
  return h;
}

// ---- the grid i-quants as the row kernels take them ---------------------------------------
// Group g (0..7) of a super-block: elements 32g..32g+31 as 4 grid entries of 8 bytes and the
// signs, deltas and scales that apply to them. The integer value of element i is
//   IQ2 / IQ3:  byte i % 8 of grid[i / 8], negated where bit i of signs is set;
//   IQ1:        8 * (int8 byte i % 8 of grid[i / 8]) - 1 where bit i / 8 of delta is set, else + 1
// (the grid's -1, 0, 1 plus ggml's +-IQ1S_DELTA = 1/8, times 8), and a super-block's dot with a
// Q8_K block is  d * d_x * kIqFactor<Block> * sum_i scale[i % 32 / 16] * value[i] * q_x[i]:
// ggml's dequantized value of element i is d * kIqFactor * scale * value exactly.
struct IqGroup {
  uint64_t grid[4];
  uint32_t signs;
  uint32_t delta;
  int scale[2];  // of elements 0..15 and 16..31 of the group: odd, 1..31
};
template <class Block> inline constexpr float kIqFactor = 0.125f;  // IQ2: (0.5 + s) / 4 = (2s + 1) / 8
template <class Block> inline constexpr bool kIqOneBit = false;
template <> inline constexpr float kIqFactor<BlockIQ3XXS> = 0.25f;  // (0.5 + s) / 2 = (2s + 1) / 4
template <> inline constexpr bool kIqOneBit<BlockIQ1S> = true;        // (2s + 1) * (g +- 1/8)
template <> inline constexpr float kIqFactor<BlockIQ3S> = 1.f;        // 2s + 1
template <> inline constexpr bool kIqOneBit<BlockIQ1M> = true;        // (2s + 1) * (g +- 1/8)

static inline uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
// Signed byte j of an 8-byte grid entry.
static inline int grid_byte(uint64_t entry, int j) { return static_cast<int8_t>(entry >> (8 * j)); }

static inline int iq_value(const IqGroup& q, int i, bool one_bit) {
  const int b = grid_byte(q.grid[i / 8], i % 8);
  if (one_bit) return 8 * b + (((q.delta >> (i / 8)) & 1) ? -1 : 1);
  return ((q.signs >> i) & 1) ? -(b & 0xFF) : (b & 0xFF);
}

static inline uint16_t iq_super_scale(const BlockIQ2XXS& b) { return b.d; }
static inline IqGroup iq_group(const BlockIQ2XXS& b, int g) {
  const uint32_t idx = load_u32(b.qs + 4 * g), aux = load_u32(b.qs + 4 * g + 2);
  IqGroup q{};
  for (int l = 0; l < 4; ++l) {
    q.grid[l] = kIQ2XXSGrid[(idx >> (8 * l)) & 0xFF];
    q.signs |= static_cast<uint32_t>(kIQ2Signs[(aux >> (7 * l)) & 127]) << (8 * l);
  }
  q.scale[0] = q.scale[1] = 2 * static_cast<int>(aux >> 28) + 1;
  return q;
}

static inline uint16_t iq_super_scale(const BlockIQ2XS& b) { return b.d; }
static inline IqGroup iq_group(const BlockIQ2XS& b, int g) {
  IqGroup q{};
  for (int l = 0; l < 4; ++l) {
    const uint16_t v = b.qs[4 * g + l];
    q.grid[l] = kIQ2XSGrid[v & 511];
    q.signs |= static_cast<uint32_t>(kIQ2Signs[v >> 9]) << (8 * l);
  }
  q.scale[0] = 2 * (b.scales[g] & 0xF) + 1;
  q.scale[1] = 2 * (b.scales[g] >> 4) + 1;
  return q;
}

static inline uint16_t iq_super_scale(const BlockIQ3XXS& b) { return b.d; }
static inline IqGroup iq_group(const BlockIQ3XXS& b, int g) {
  const uint32_t aux = load_u32(b.qs + kQKK / 4 + 4 * g);
  IqGroup q{};
  for (int l = 0; l < 4; ++l) {
    q.grid[l] = kIQ3XXSGrid[b.qs[8 * g + 2 * l]] | static_cast<uint64_t>(kIQ3XXSGrid[b.qs[8 * g + 2 * l + 1]]) << 32;
    q.signs |= static_cast<uint32_t>(kIQ2Signs[(aux >> (7 * l)) & 127]) << (8 * l);
  }
  q.scale[0] = q.scale[1] = 2 * static_cast<int>(aux >> 28) + 1;
  return q;
}

static inline uint16_t iq_super_scale(const BlockIQ1S& b) { return b.d; }
static inline IqGroup iq_group(const BlockIQ1S& b, int g) {
  const int qh = b.qh[g];
  IqGroup q{};
  for (int l = 0; l < 4; ++l) q.grid[l] = kIQ1SGrid[b.qs[4 * g + l] | (((qh >> (3 * l)) & 7) << 8)];
  q.delta = (qh & 0x8000) ? 0xF : 0;
  q.scale[0] = q.scale[1] = 2 * ((qh >> 12) & 7) + 1;
  return q;
}

static inline uint16_t iq_super_scale(const BlockIQ3S& b) { return b.d; }
static inline IqGroup iq_group(const BlockIQ3S& b, int g) {
  const int qh = b.qh[g];
  IqGroup q{};
  for (int l = 0; l < 4; ++l) {
    const int i1 = b.qs[8 * g + 2 * l] | (((qh >> (2 * l)) & 1) << 8);
    const int i2 = b.qs[8 * g + 2 * l + 1] | (((qh >> (2 * l + 1)) & 1) << 8);
    q.grid[l] = kIQ3SGrid[i1] | static_cast<uint64_t>(kIQ3SGrid[i2]) << 32;
  }
  q.signs = load_u32(b.signs + 4 * g);
  q.scale[0] = q.scale[1] = 2 * ((b.scales[g / 2] >> (4 * (g % 2))) & 0xF) + 1;
  return q;
}

static inline uint16_t iq_super_scale(const BlockIQ2S& b) { return b.d; }
static inline IqGroup iq_group(const BlockIQ2S& b, int g) {
  IqGroup q{};
  for (int l = 0; l < 4; ++l) q.grid[l] = kIQ2SGrid[b.qs[4 * g + l] | ((b.qh[g] << (8 - 2 * l)) & 0x300)];
  q.signs = load_u32(b.qs + kQKK / 8 + 4 * g);
  q.scale[0] = 2 * (b.scales[g] & 0xF) + 1;
  q.scale[1] = 2 * (b.scales[g] >> 4) + 1;
  return q;
}

// IQ1_M's f16 super-scale: the top nibbles of its 4 scale words (ggml's iq1m_scale_t).
static inline uint16_t iq_super_scale(const BlockIQ1M& b) {
  uint16_t sc[4];
  std::memcpy(sc, b.scales, sizeof(sc));
  return static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
}
static inline IqGroup iq_group(const BlockIQ1M& b, int g) {
  const int qh0 = b.qh[2 * g], qh1 = b.qh[2 * g + 1];
  uint16_t sc;
  std::memcpy(&sc, b.scales + 2 * (g / 2), sizeof(sc));
  IqGroup q{};
  q.grid[0] = kIQ1SGrid[b.qs[4 * g] | ((qh0 << 8) & 0x700)];
  q.grid[1] = kIQ1SGrid[b.qs[4 * g + 1] | ((qh0 << 4) & 0x700)];
  q.grid[2] = kIQ1SGrid[b.qs[4 * g + 2] | ((qh1 << 8) & 0x700)];
  q.grid[3] = kIQ1SGrid[b.qs[4 * g + 3] | ((qh1 << 4) & 0x700)];
  q.delta = static_cast<uint32_t>(((qh0 >> 3) & 1) | ((qh0 >> 6) & 2) | ((qh1 >> 1) & 4) | ((qh1 >> 4) & 8));
  q.scale[0] = 2 * ((sc >> (6 * (g % 2))) & 7) + 1;
  q.scale[1] = 2 * ((sc >> (6 * (g % 2) + 3)) & 7) + 1;
  return q;
}

// (static: the x86 files, built with ISA flags, must not emit shared inline copies.)
// Sub-block j (0..7) scale and min of a Q4_K/Q5_K super-block (ggml's get_scale_min_k4).
static inline void scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Round to nearest, ties to even, for |x| <= 2^22 (ggml's nearest_int).
static inline int nearest_int(float x) {
  float v = x + 12582912.f;
  int32_t i;
  std::memcpy(&i, &v, sizeof(i));
  return (i & 0x007fffff) - 0x00400000;
}

}  // namespace plimsoll::kernels
