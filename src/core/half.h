// IEEE half (f16) and bfloat16 <-> f32 conversions, scalar and exact
// (round-to-nearest-even on the way down). Used by readers, writers and the
// scalar kernel twins.
#pragma once

#include <cstdint>
#include <cstring>

namespace plimsoll {

inline float f32_from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t bits_from_f32(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return f32_from_bits(sign);
    // subnormal: normalise
    exp = 127 - 15 + 1;
    while ((mant & 0x400u) == 0) { mant <<= 1; --exp; }
    mant &= 0x3ffu;
    return f32_from_bits(sign | (exp << 23) | (mant << 13));
  }
  if (exp == 31) return f32_from_bits(sign | 0x7f800000u | (mant << 13));  // inf / nan
  return f32_from_bits(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t x = bits_from_f32(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {  // result is subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24: half subnormals count units of 2^-24
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    uint32_t res = m >> shift;
    if (rem > half || (rem == half && (res & 1u))) ++res;
    return static_cast<uint16_t>(sign | res);
  }
  uint32_t res = ((abs >> 13) - ((127 - 15) << 10));
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (res & 1u))) ++res;
  return static_cast<uint16_t>(sign | res);
}

inline float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t x = bits_from_f32(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace plimsoll
