// Small 256-bit helpers shared by the x86 kernel files built with AVX2 (or more):
// horizontal sums and maximum, 8-vector sums, an unaligned 32-byte load, 8 x 8 int32 and
// float transposes, Q4_0's nibbles, in-place integer adds for the tiles' step loops, an L2
// prefetch of the rows a panel packs next. Include only from files compiled with at least
// AVX2 + FMA + F16C; everything has internal linkage, so no ISA-flagged code leaks into
// the baseline build through a shared inline symbol.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace plimsoll::kernels {
namespace {

// Asks L2 for bytes [begin, end) in n_steps slices, one per step(): a panel kernel
// names the weight rows it packs next and steps once per tile it computes on the rows
// it packed, so packing reads them from L2, not memory (AVX2 F16 at 4-16 tokens,
// kernels_bench BM_DecodeStream; docs/benchmarks.md).
class NextRowsPrefetch {
 public:
  NextRowsPrefetch(const std::byte* begin, const std::byte* end, int64_t n_steps)
      : p_(reinterpret_cast<const char*>(begin)), end_(reinterpret_cast<const char*>(end)),
        step_bytes_(((end - begin + 63) / 64 + n_steps - 1) / std::max<int64_t>(n_steps, 1) * 64) {}
  void step() {
    for (const char* e = p_ + std::min<int64_t>(step_bytes_, end_ - p_); p_ < e; p_ += 64) _mm_prefetch(p_, _MM_HINT_T1);
  }

 private:
  const char* p_;
  const char* end_;
  int64_t step_bytes_;
};

// The AVX2 panels' row and token blocking (panels_avx2.cpp, panels_kquants_avx2.cpp): batches
// of kBlockedMinTokens+ tokens whose prepared activations pass kTokBlockBytes (a prefill) go
// kPackRows weight rows at a time over blocks of kTokBlockBytes of activations, so both stay in
// L2; smaller batches take one pack at a time over every token (at 16-64 tokens the blocks lost
// on rows of 2048-5632 columns; docs/benchmarks.md).
constexpr int kPackRows = 48;
constexpr int64_t kTokBlockBytes = int64_t{128} << 10;
constexpr int64_t kBlockedMinTokens = 128;
// Tokens of act_row_bytes each per block: a multiple of tok, at least tok.
inline int64_t panel_token_block(int64_t act_row_bytes, int tok) {
  return std::max<int64_t>(tok, kTokBlockBytes / act_row_bytes / tok * tok);
}
inline bool panel_blocked(int64_t n_tokens, int64_t token_block) {
  return n_tokens >= kBlockedMinTokens && n_tokens > token_block;
}

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// A Q4_0 block's 16 bytes of nibbles -> its 32 values (0..15) in element order: the
// bytes in both halves (one broadcast load), the high half shifted right by 4.
inline __m256i q4_0_nibbles(const uint8_t* qs) {
  const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  return _mm256_and_si256(_mm256_srlv_epi32(q, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi8(0x0F));
}

// acc += v in int16 / int32 lanes, written in place. In the panel tiles' step loops GCC
// otherwise adds into a fresh register and moves it back, one move per accumulator a
// step (8 of ~30 instructions; the Q8_0 tile ran faster without them).
inline void add_epi16_in_place(__m256i& acc, __m256i v) { __asm__("vpaddw %1, %0, %0" : "+x"(acc) : "x"(v)); }
inline void add_epi32_in_place(__m256i& acc, __m256i v) { __asm__("vpaddd %1, %0, %0" : "+x"(acc) : "x"(v)); }

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// Per 128-bit half, lane j (j < 4) = the sum of that half's 4 lanes of s[j]: unpacks and adds.
inline __m256i sum4_per_half(__m256i s0, __m256i s1, __m256i s2, __m256i s3) {
  // t: per half, [a 0+2, b 0+2, a 1+3, b 1+3] of the pairs (s0, s1) and (s2, s3)
  const __m256i t0 = _mm256_add_epi32(_mm256_unpacklo_epi32(s0, s1), _mm256_unpackhi_epi32(s0, s1));
  const __m256i t1 = _mm256_add_epi32(_mm256_unpacklo_epi32(s2, s3), _mm256_unpackhi_epi32(s2, s3));
  return _mm256_add_epi32(_mm256_unpacklo_epi64(t0, t1), _mm256_unpackhi_epi64(t0, t1));
}

// lane j = the sum of the 8 lanes of s[j]. A tree of unpacks and adds (14 shuffles, 7 adds),
// not vphaddd: each of its 6 hadds takes 2 cycles of the shuffle pipes on a Zen 4 (an
// unpack or permute 0.5), and the 8-block step of the Q8_0 / Q4_0 gemv waited on them.
inline __m256i reduce8(const __m256i (&s)[8]) {
  const __m256i g0 = sum4_per_half(s[0], s[1], s[2], s[3]), g1 = sum4_per_half(s[4], s[5], s[6], s[7]);
  return _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20), _mm256_permute2x128_si256(g0, g1, 0x31));
}

// The same for floats (vhaddps costs what vphaddd does).
inline __m256 reduce8(const __m256 (&p)[8]) {
  __m256 t[4];
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm256_add_ps(_mm256_unpacklo_ps(p[2 * i], p[2 * i + 1]), _mm256_unpackhi_ps(p[2 * i], p[2 * i + 1]));
  }
  const auto lo64 = [](__m256 a, __m256 b) {
    return _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(a), _mm256_castps_pd(b)));
  };
  const auto hi64 = [](__m256 a, __m256 b) {
    return _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(a), _mm256_castps_pd(b)));
  };
  const __m256 g0 = _mm256_add_ps(lo64(t[0], t[1]), hi64(t[0], t[1]));
  const __m256 g1 = _mm256_add_ps(lo64(t[2], t[3]), hi64(t[2], t[3]));
  return _mm256_add_ps(_mm256_permute2f128_ps(g0, g1, 0x20), _mm256_permute2f128_ps(g0, g1, 0x31));
}

// An 8 x 8 transpose of int32 lanes: r[j] (block j's 32 bytes, as 8 int32 lanes)
// -> r[k] = lane k of every block (the AVX2 panels' group layout).
inline void transpose8x8(__m256i (&r)[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x31);
  }
}

// r[j] -> r[i] lane j = lane i of r[j] (8 x 8 floats): the int32 transpose above.
inline void transpose8(__m256 (&r)[8]) {
  __m256i v[8];
  for (int i = 0; i < 8; ++i) v[i] = _mm256_castps_si256(r[i]);
  transpose8x8(v);
  for (int i = 0; i < 8; ++i) r[i] = _mm256_castsi256_ps(v[i]);
}

}  // namespace
}  // namespace plimsoll::kernels
