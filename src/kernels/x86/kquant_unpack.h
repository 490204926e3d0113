// Q4_K / Q6_K super-blocks unpacked for the x86 K-quant kernels (the AVX-512
// tiles, tiles_kquants_avx512.cpp, and AMX, tiles_amx_kquants.cpp): 256 weights
// as 4 chunks of 64 unsigned bytes in each layout's own order (the prepared
// activations follow the same order) and the 16-bit scale of every 16 bytes.
// Include only from files compiled with the AVX-512 flags (internal linkage).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/blocks.h"

namespace plimsoll::kernels {
namespace {

struct KUnpacked {
  __m512i q[4];  // chunk c, byte k: the weight at element e with position(e) == 64c + k
  __m256i g16;   // lane 4c + g: the int16 scale of chunk c's bytes 16g..16g+15
  __m256i m16;   // Q4_K: lane i: the min of elements 16i..16i+15 (element order); Q6_K: zero
  float d, dmin;  // f16 super-scales as f32 (Q6_K: dmin 0)
};

// The int16 lanes of chunk c (32 per 64 bytes) -> their 16-byte group's lane in g16.
inline __m512i chunk_group_index(int c) {
  const __m512i quarter = _mm512_setr_epi32(0, 0, 0, 0, 0x00010001, 0x00010001, 0x00010001, 0x00010001,
                                            0x00020002, 0x00020002, 0x00020002, 0x00020002, 0x00030003,
                                            0x00030003, 0x00030003, 0x00030003);
  return _mm512_add_epi16(quarter, _mm512_set1_epi16(static_cast<short>(4 * c)));
}

// Q4_K: chunk 0 = sub-blocks 0 and 2 (the low nibbles of qs[0..63]), chunk 1 =
// sub-blocks 1 and 3 (their high nibbles), chunk 2 = 4 and 6, chunk 3 = 5 and 7.
struct Q4KUnpack {
  using Block = BlockQ4K;
  static int position(int e) {
    const int s = e / 32, h = s / 4;
    return 128 * h + (s % 2) * 64 + (s % 4 / 2) * 32 + e % 32;
  }
  static void unpack(const Block& b, KUnpacked* u) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int h = 0; h < 2; ++h) {
      const __m512i q = _mm512_loadu_si512(b.qs + 64 * h);
      u->q[2 * h] = _mm512_and_si512(q, m4);
      u->q[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
    }
    // ggml's 6-bit unpacking (get_scale_min_k4 for all j at once): 8 scales, then 8 mins
    uint32_t a[3], sm[4];
    std::memcpy(a, b.scales, 12);
    constexpr uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
    sm[0] = a[0] & k1;
    sm[1] = (a[2] & k2) | (((a[0] >> 6) & k3) << 4);
    sm[2] = a[1] & k1;
    sm[3] = ((a[2] >> 4) & k2) | (((a[1] >> 6) & k3) << 4);
    const __m256i v = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sm)));
    // chunk c, group g: sub-block 4 (c / 2) + c % 2 + 2 (g / 2)
    u->g16 = _mm256_permutexvar_epi16(_mm256_setr_epi16(0, 0, 2, 2, 1, 1, 3, 3, 4, 4, 6, 6, 5, 5, 7, 7), v);
    u->m16 = _mm256_permutexvar_epi16(_mm256_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15), v);
    u->d = _cvtsh_ss(b.d);
    u->dmin = _cvtsh_ss(b.dmin);
  }
};

// Q6_K: chunks are elements 0..63, 64..127, ... in order, values 0..63 (the
// weight is value - 32); g16: the 16 int8 scales.
struct Q6KUnpack {
  using Block = BlockQ6K;
  static int position(int e) { return e; }
  static void unpack(const Block& b, KUnpacked* u) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30);
    const __m512i shl = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(4), _mm512_set1_epi16(2));
    const __m512i shr = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_setzero_si512(), _mm512_set1_epi16(2));
    for (int h = 0; h < 2; ++h) {  // 128 elements: ql[64h..], qh[32h..]
      const __m512i ql = _mm512_loadu_si512(b.ql + 64 * h);
      const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h)));
      // elements 0..31: qh bits 0-1, 32..63: bits 2-3, 64..95: bits 4-5, 96..127: bits 6-7 -> bits 4-5
      u->q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_and_si512(_mm512_sllv_epi16(qh, shl), m2));
      u->q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                        _mm512_and_si512(_mm512_srlv_epi16(qh, shr), m2));
    }
    u->g16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
    u->m16 = _mm256_setzero_si256();
    u->d = _cvtsh_ss(b.d);
    u->dmin = 0.f;
  }
};

}  // namespace
}  // namespace plimsoll::kernels
