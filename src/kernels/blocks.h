// Block layouts of the quantized dtypes, byte-for-byte as ggml/llama.cpp stores
// them in GGUF (ggml-common.h), plus the small helpers every codec shares.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

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
