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
// Group g (0..7) of a Q3_K super-block: elements 32g..32g+31 as bytes -4..3 (the low 2 bits
// at bits 2 (g % 4) of qs[32 (g / 4)..], minus 4 where bit g of hmask is clear).
inline __m256i q3k_group(const BlockQ3K& w, __m256i hmask, int g) {
  const __m256i q = _mm256_srl_epi16(load32(w.qs + 32 * (g / 4)), _mm_cvtsi32_si128(2 * (g % 4)));
  const __m256i low = _mm256_and_si256(q, _mm256_set1_epi8(3));
  const __m256i bit = _mm256_set1_epi8(static_cast<char>(1u << g));
  const __m256i clear = _mm256_cmpeq_epi8(_mm256_and_si256(hmask, bit), _mm256_setzero_si256());
  return _mm256_sub_epi8(low, _mm256_and_si256(clear, _mm256_set1_epi8(4)));
}
// Group g (0..7) of a Q2_K super-block: elements 32g..32g+31 as bytes 0..3 (the bits of Q3_K's
// low bits).
inline __m256i q2k_group(const BlockQ2K& w, int g) {
  const __m256i q = _mm256_srl_epi16(load32(w.qs + 32 * (g / 4)), _mm_cvtsi32_si128(2 * (g % 4)));
  return _mm256_and_si256(q, _mm256_set1_epi8(3));
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
