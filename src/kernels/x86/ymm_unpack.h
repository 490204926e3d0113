// The 32 values of a block or 32-element group as signed bytes (element order), built in
// registers: shared by the 256-bit row kernels (ymm_kernels.inc) and the AVX2 panels
// (panels_avx2.cpp, panels_kquants_avx2.cpp), which pack them once per weight row. Include only
// from files compiled with at least AVX2 + FMA + F16C, after ymm_common.h; internal linkage.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/blocks.h"
#include "kernels/x86/ymm_common.h"

namespace plimsoll::kernels {
namespace {

// ---- 32-element blocks (Q8_0 activations) --------------------------------------------
inline __m256i bits_to_bytes(uint32_t bits) {  // byte i: 0xFF where bit i is set
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                        _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                                         2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i m = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(v, m), m);
}
inline __m256i q5_values(const uint8_t* qs, const uint8_t (&qh)[4]) {  // 0..31
  return _mm256_or_si256(q4_0_nibbles(qs), _mm256_and_si256(bits_to_bytes(q5_high_bits(qh)), _mm256_set1_epi8(0x10)));
}
inline __m256i iq4nl_lookup(__m256i nibbles) {  // kIQ4NLValues[nibble] per byte
  const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
  return _mm256_shuffle_epi8(table, nibbles);
}
// ---- 256-element super-blocks (Q8_K activations) --------------------------------------
// Group g (0..7) of a Q3_K super-block as bytes 0..7, the values + 4: the low 2 bits plus 4
// where bit g of hmask is set (no compare: hmask shifted so bit g lands on bit 2).
inline __m256i q3k_group_plus4(const BlockQ3K& w, __m256i hmask, int g) {
  const __m256i q = _mm256_srl_epi16(load32(w.qs + 32 * (g / 4)), _mm_cvtsi32_si128(2 * (g % 4)));
  const __m256i h = g >= 2 ? _mm256_srl_epi16(hmask, _mm_cvtsi32_si128(g - 2))
                           : _mm256_sll_epi16(hmask, _mm_cvtsi32_si128(2 - g));
  return _mm256_or_si256(_mm256_and_si256(q, _mm256_set1_epi8(3)), _mm256_and_si256(h, _mm256_set1_epi8(4)));
}
// The 16 scales of a Q3_K super-block as int16 (q3k_scale - 32, element order), built as
// ggml's AVX2 q3_K dot does: 4 words of low nibbles with their high 2 bits.
inline __m256i q3k_scales16(const BlockQ3K& w) {
  uint32_t a[3];
  __builtin_memcpy(a, w.scales, 12);
  constexpr uint32_t k1 = 0x03030303, k2 = 0x0f0f0f0f;
  const __m128i sc = _mm_setr_epi32(static_cast<int>((a[0] & k2) | ((a[2] & k1) << 4)),
                                    static_cast<int>((a[1] & k2) | (((a[2] >> 2) & k1) << 4)),
                                    static_cast<int>(((a[0] >> 4) & k2) | (((a[2] >> 4) & k1) << 4)),
                                    static_cast<int>(((a[1] >> 4) & k2) | (((a[2] >> 6) & k1) << 4)));
  return _mm256_sub_epi16(_mm256_cvtepu8_epi16(sc), _mm256_set1_epi16(32));
}
// Group g (0..7) of a Q2_K super-block: elements 32g..32g+31 as bytes 0..3 (the bits of Q3_K's
// low bits).
inline __m256i q2k_group(const BlockQ2K& w, int g) {
  const __m256i q = _mm256_srl_epi16(load32(w.qs + 32 * (g / 4)), _mm_cvtsi32_si128(2 * (g % 4)));
  return _mm256_and_si256(q, _mm256_set1_epi8(3));
}
// The 16 scales (low nibbles) and mins (high nibbles) of a Q2_K super-block as int16.
inline __m256i q2k_scales16(const BlockQ2K& w) {
  return _mm256_cvtepu8_epi16(_mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)),
                                            _mm_set1_epi8(0x0F)));
}
inline __m256i q2k_mins16(const BlockQ2K& w) {
  const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales));
  return _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), _mm_set1_epi8(0x0F)));
}
// 16 per-16 scales (int16, element order) -> halves[h]: scales 8h..8h+7 in both 128-bit halves,
// so that group g's pair is group_scales(halves, g).
struct ScaleHalves {
  __m256i h[2];
};
inline ScaleHalves scale_halves(__m256i s16) {
  return {{_mm256_permute2x128_si256(s16, s16, 0x00), _mm256_permute2x128_si256(s16, s16, 0x11)}};
}
// int16 lanes 0..7 (the group's elements 0..15) scale 2g, lanes 8..15 scale 2g + 1 (a vpshufb
// with a constant mask once g is unrolled).
inline __m256i group_scales(const ScaleHalves& s, int g) {
  const int lo = 2 * g % 8;
  const auto b = [](int lane) { return static_cast<int16_t>((2 * lane) | ((2 * lane + 1) << 8)); };
  return _mm256_shuffle_epi8(s.h[g / 4], _mm256_set_m128i(_mm_set1_epi16(b(lo + 1)), _mm_set1_epi16(b(lo))));
}
// A grid i-quant group as |values| (u8, <= 62) and their signs as +-1 bytes, so a dot with x is
// maddubs(magnitudes, sign(x, signs)) (IQ2 / IQ3; two instructions fewer than building the
// signed values and taking the sign trick on them). IQ1 has no sign bits: iq_values.
struct IqMagnitudes {
  __m256i mag, sign;
};
template <class Block>
inline IqMagnitudes iq_magnitudes(const IqGroup& q) {
  static_assert(!kIqOneBit<Block>);
  const __m256i g = _mm256_set_epi64x(static_cast<int64_t>(q.grid[3]), static_cast<int64_t>(q.grid[2]),
                                      static_cast<int64_t>(q.grid[1]), static_cast<int64_t>(q.grid[0]));
  return {g, _mm256_or_si256(bits_to_bytes(q.signs), _mm256_set1_epi8(1))};  // -1 where negative, else 1
}
// A grid i-quant group's 32 values (blocks.h's IqGroup: |v| <= 62).

template <class Block>
inline __m256i iq_values(const IqGroup& q) {
  const __m256i g = _mm256_set_epi64x(static_cast<int64_t>(q.grid[3]), static_cast<int64_t>(q.grid[2]),
                                      static_cast<int64_t>(q.grid[1]), static_cast<int64_t>(q.grid[0]));
  if constexpr (kIqOneBit<Block>) {  // 8 * (-1, 0, 1) -+ 1: entry l's 8 bytes take -1 where bit l of delta is set
    const __m256i g2 = _mm256_add_epi8(g, g), g4 = _mm256_add_epi8(g2, g2);
    const __m256i bit = _mm256_set_epi64x(8, 4, 2, 1);
    const __m256i neg = _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x(q.delta), bit), bit);
    return _mm256_add_epi8(_mm256_add_epi8(g4, g4), _mm256_or_si256(neg, _mm256_set1_epi8(1)));
  } else {
    const __m256i m = bits_to_bytes(q.signs);  // 0xFF where negative: (g ^ m) - m = -g
    return _mm256_sub_epi8(_mm256_xor_si256(g, m), m);
  }
}

}  // namespace
}  // namespace plimsoll::kernels
