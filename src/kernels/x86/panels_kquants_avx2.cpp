// AVX2 panel kernels for the 256-element super-block weights (Q4_K, Q5_K, Q6_K; in the plain
// AVX2 build also Q2_K, Q3_K, IQ4_XS and the grid i-quants IQ2_XXS ... IQ1_M) over batches of
// tokens, for CPUs without AVX-512 (built with AVX2 + FMA + F16C only).
// The activations are quantized to Q8_K once per call (exactly as the scalar
// quantize_q8_k). Each thread unpacks kRows weight rows at a time, one
// super-block (256 weights) per row into the per-thread scratch: the weights as
// 256 unsigned bytes (Q4_K 0..15, Q5_K 0..31, Q6_K 0..63), the 16-bit scales and
// the correction per 16 weights (Q4_K/Q5_K: the min; Q6_K: -32 x the scale, for
// the values' offset).
// Weights and activations are in the group layout of the Q4_0 panels (one
// 32-weight chunk per int32 lane: step k holds bytes 4k..4k+3 of each of the 8
// chunks), so a chunk's scale applies to its lane as a vector and the unsigned
// products add up in int16 over several steps before one vpmaddwd with the scales:
//   Q4_K: 8 steps (a lane's int16 <= 8 * 2 * 15 * 127 < 2^15), one scale per chunk;
//   Q5_K, Q6_K: 2 steps (<= 2 * 2 * 63 * 127); Q6_K's chunk holds two 16-weight
//   scales, for steps 0-3 and 4-7.
//   Q2_K (0..3), Q3_K (the values + 4, 0..7), IQ1_S / IQ1_M (+ 9, 0..18): 4 steps (their
//   scales are per 16 weights); IQ2 / IQ3 (|w| <= 62, + 64: 2..126): 1 step; IQ4_XS (|w| <= 127)
//   keeps its values as signed bytes and takes the sign trick, maddubs(|w|, sign(x, w)), 1 step.
//   An offset's correction is -offset * scale per 16 weights against the bsums.
// Per (row, token) and super-block:
//   isum = sum over spans of madd(sum of maddubs(q, x), scale)   (exact in int32)
//   acc += isum * d_w * d_x  (- msum * dmin_w * d_x,  msum = madd(min, bsums))
// so the integer sums equal the scalar twin's and only the f32 order differs.
// The same source is built a second time with AVX-VNNI (panels_kquants_avxvnni.cpp,
// __AVXVNNI__ defined; add_avx2_vnni_kquant_panels()) and a third with AVX-512 VNNI + VL
// (panels_kquants_avx512_ymm.cpp: the EVEX 256-bit vpdpbusd; add_avx512_ymm_kquant_panels(),
// which the AVX-512 table runs ahead of its zmm K-quant tiles): each step is one vpdpbusd
// into int32 lanes (no int16 span), and a lane's sum takes its scale by vpmulld once per
// scale span (Q4_K / Q5_K: the 8 steps; Q6_K: steps 0-3 and 4-7).
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/blocks.h"
#include "kernels/matmul_impl.h"
#include "kernels/scratch.h"
#include "kernels/x86/ymm_common.h"
#include "kernels/x86/ymm_unpack.h"

namespace plimsoll::kernels {
namespace {

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
constexpr bool kVnni = true;
inline __m256i dot_u8s8(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_epi32(acc, u8, s8); }
#elif defined(__AVXVNNI__)
constexpr bool kVnni = true;
inline __m256i dot_u8s8(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_avx_epi32(acc, u8, s8); }
#else
constexpr bool kVnni = false;
inline __m256i dot_u8s8(__m256i acc, __m256i, __m256i) { return acc; }  // never called: behind kVnni
#endif

constexpr int kRows = 4;  // weight rows unpacked and run together
constexpr int kTok = 2;   // tokens per register tile

int64_t padded_tokens(int64_t n) { return (n + kPanelTokens - 1) / kPanelTokens * kPanelTokens; }

// 32-byte chunks c[j] (elements 32j..32j+31) -> out (32-byte aligned) in the group
// layout: step k (32 bytes) holds bytes 4k..4k+3 of every chunk.
inline void store_group_layout(__m256i (&c)[8], uint8_t* out) {
  transpose8x8(c);
  for (int k = 0; k < 8; ++k) _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32 * k), c[k]);
}

// ---- activations: Q8_K, one super-block of a token (5 cache lines) ---------------
struct KAct {
  int8_t qs[kQKK];    // group layout: [step k][4 * chunk j + i] = x[32j + 4k + i]
  int16_t bsums[16];  // sums of the values per 16 elements
  float d;            // Q8_K scale
  float pad[7];
};
static_assert(sizeof(KAct) == 320);

int64_t act_row_bytes(int64_t cols) { return cols / kQKK * static_cast<int64_t>(sizeof(KAct)); }
int64_t act_bytes(int64_t n_tokens, int64_t cols) { return padded_tokens(n_tokens) * act_row_bytes(cols); }

// One 256-float super-block to Q8_K exactly as the scalar quantize_q8_k: the scale
// from the first element of largest magnitude (iscale = -127 / it), q = min(127,
// round-half-even(iscale * x)), bsums per 16 values, d = 1 / iscale; all zeros: zeros.
float quantize_q8k_block(const float* x, int8_t* qs, int16_t* bsums) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 vmax = _mm256_setzero_ps();
  for (int i = 0; i < kQKK; i += 8) vmax = _mm256_max_ps(vmax, _mm256_and_ps(abs_mask, _mm256_loadu_ps(x + i)));
  const float amax = hmax(vmax);
  if (amax == 0.f) {
    std::memset(qs, 0, kQKK);
    std::memset(bsums, 0, 16 * sizeof(int16_t));
    return 0.f;
  }
  float max = 0.f;
  for (int i = 0; i < kQKK; i += 8) {  // the first element with |x| == amax, as the scalar scan keeps it
    const __m256 hit = _mm256_cmp_ps(_mm256_and_ps(abs_mask, _mm256_loadu_ps(x + i)), _mm256_set1_ps(amax), _CMP_EQ_OQ);
    const int mask = _mm256_movemask_ps(hit);
    if (mask != 0) {
      max = x[i + __builtin_ctz(static_cast<unsigned>(mask))];
      break;
    }
  }
  const float iscale = -127.f / max;
  const __m256 is = _mm256_set1_ps(iscale);
  const __m256i hi = _mm256_set1_epi32(127);
  for (int g = 0; g < kQKK / 32; ++g) {  // cvtps rounds half to even (default MXCSR), as nearest_int
    __m256i q[4];
    for (int i = 0; i < 4; ++i) {
      q[i] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(is, _mm256_loadu_ps(x + 32 * g + 8 * i))), hi);
    }
    bsums[2 * g] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[0], q[1])));
    bsums[2 * g + 1] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[2], q[3])));
    // packs work per 128-bit lane: dwords 0 2 4 6 | 1 3 5 7 of the element order; fix the order
    const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + 32 * g),
                        _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
  return 1.f / iscale;
}

void prepare(const float* x, int64_t n_tokens, int64_t cols, int64_t tt0, int64_t tt1, std::byte* dst) {
  const int64_t nb = cols / kQKK, row_bytes = act_row_bytes(cols);
  for (int64_t t = tt0 * kPanelTokens; t < tt1 * kPanelTokens; ++t) {
    auto* out = reinterpret_cast<KAct*>(dst + t * row_bytes);
    if (t >= n_tokens) {  // padding of the last token tile
      std::memset(static_cast<void*>(out), 0, static_cast<size_t>(row_bytes));
      continue;
    }
    for (int64_t b = 0; b < nb; ++b) {
      out[b].d = quantize_q8k_block(x + t * cols + b * kQKK, out[b].qs, out[b].bsums);
      std::memset(out[b].pad, 0, sizeof(out[b].pad));
      __m256i c[8];
      for (int j = 0; j < 8; ++j) c[j] = load32(out[b].qs + 32 * j);
      store_group_layout(c, reinterpret_cast<uint8_t*>(out[b].qs));
    }
  }
}

// ---- weights: one super-block of one row, unpacked --------------------------------
struct KPacked {
  uint8_t q[kQKK];         // group layout, as KAct::qs (kSigned types: signed bytes)
  int16_t scale[2][16];    // [half]: lane j's two int16 = the scale of chunk j's weights in
                           // steps 0-3 (half 0) and 4-7 (half 1); Q4_K/Q5_K: both the same
  int16_t corr[16];        // per 16 elements: the min (Q4_K/Q5_K/Q2_K), -32 * scale (Q6_K),
                           // -4 * scale (Q3_K); zero for the signed types
  float d, dmin;
  float pad[6];
};
static_assert(sizeof(KPacked) == 384);

// scale[h] from the per-16 scales s16[0..15] (chunk j: s16[2j], s16[2j + 1])
inline void spread_scales(const int16_t* s16, KPacked* p) {
  for (int j = 0; j < 8; ++j) {
    for (int h = 0; h < 2; ++h) p->scale[h][2 * j] = p->scale[h][2 * j + 1] = s16[2 * j + h];
  }
}

// Q4_K / Q5_K: elements 64g + l (l < 32) are the low nibbles of qs[32g + l], 64g + 32 + l
// the high ones; Q5_K adds bit 2g (resp. 2g + 1) of qh[l] as the 5th bit.
template <bool kFive>
void pack_q45k(const std::byte* blk, KPacked* p) {
  const auto* q4 = reinterpret_cast<const BlockQ4K*>(blk);
  const uint8_t* qs = kFive ? reinterpret_cast<const BlockQ5K*>(blk)->qs : q4->qs;
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i qh = kFive ? load32(reinterpret_cast<const BlockQ5K*>(blk)->qh) : _mm256_setzero_si256();
  __m256i c[8];
  for (int g = 0; g < 4; ++g) {
    const __m256i q = load32(qs + 32 * g);
    __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    if (kFive) {
      const __m256i b0 = _mm256_set1_epi8(static_cast<char>(1u << (2 * g)));
      const __m256i b1 = _mm256_set1_epi8(static_cast<char>(1u << (2 * g + 1)));
      lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b0), b0), _mm256_set1_epi8(0x10)));
      hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b1), b1), _mm256_set1_epi8(0x10)));
    }
    c[2 * g] = lo;
    c[2 * g + 1] = hi;
  }
  store_group_layout(c, p->q);
  int16_t s16[16];
  for (int j = 0; j < 8; ++j) {
    uint8_t sc = 0, mn = 0;
    scale_min_k4(j, q4->scales, &sc, &mn);
    s16[2 * j] = s16[2 * j + 1] = sc;
    p->corr[2 * j] = p->corr[2 * j + 1] = mn;
  }
  spread_scales(s16, p);
  p->d = _cvtsh_ss(q4->d);
  p->dmin = _cvtsh_ss(q4->dmin);
}

// Q6_K: 128 elements per half h from ql[64h..64h+63] (low 4 bits) and qh[32h..32h+31]
// (2 high bits each), as ymm_dot_q6k unpacks them; values 0..63 (the weight is value - 32).
void pack_q6k(const std::byte* blk, KPacked* p) {
  const auto& b = *reinterpret_cast<const BlockQ6K*>(blk);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256i c[8];
  for (int h = 0; h < 2; ++h) {
    const __m256i ql0 = load32(b.ql + 64 * h), ql1 = load32(b.ql + 64 * h + 32);
    const __m256i qh = load32(b.qh + 32 * h);
    c[4 * h] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x03)), 4));
    c[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x0C)), 2));
    c[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, _mm256_set1_epi8(0x30)));
    c[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                   _mm256_srli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(static_cast<char>(0xC0))), 2));
  }
  store_group_layout(c, p->q);
  int16_t s16[16];
  for (int g = 0; g < 16; ++g) {
    s16[g] = b.scales[g];
    p->corr[g] = static_cast<int16_t>(-32 * b.scales[g]);
  }
  spread_scales(s16, p);
  p->d = _cvtsh_ss(b.d);
  p->dmin = 0.f;
}

// chunks c (element order), per-16 scales and corrections -> p; d, dmin: the f32 factors
inline void store_packed(__m256i (&c)[8], const int16_t* s16, const int16_t* corr, float d, float dmin, KPacked* p) {
  store_group_layout(c, p->q);
  spread_scales(s16, p);
  std::memcpy(p->corr, corr, sizeof(p->corr));
  p->d = d;
  p->dmin = dmin;
}

// Q2_K: values 0..3, scale and min per 16 weights (low and high nibble of scales[j]).
inline void pack_q2k(const std::byte* blk, KPacked* p) {
  const auto& b = *reinterpret_cast<const BlockQ2K*>(blk);
  __m256i c[8];
  for (int g = 0; g < 8; ++g) c[g] = q2k_group(b, g);
  alignas(32) int16_t s16[16], mins[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(s16), q2k_scales16(b));
  _mm256_store_si256(reinterpret_cast<__m256i*>(mins), q2k_mins16(b));
  store_packed(c, s16, mins, _cvtsh_ss(b.d), _cvtsh_ss(b.dmin), p);
}

// Q3_K: values -4..3 stored + 4; scale per 16 (q3k_scale - 32), its correction -4 * scale.
inline void pack_q3k(const std::byte* blk, KPacked* p) {
  const auto& b = *reinterpret_cast<const BlockQ3K*>(blk);
  const __m256i hmask = load32(b.hmask);
  __m256i c[8];
  for (int g = 0; g < 8; ++g) c[g] = q3k_group_plus4(b, hmask, g);
  alignas(32) int16_t s16[16], corr[16];
  const __m256i sc = q3k_scales16(b);
  _mm256_store_si256(reinterpret_cast<__m256i*>(s16), sc);
  _mm256_store_si256(reinterpret_cast<__m256i*>(corr), _mm256_mullo_epi16(sc, _mm256_set1_epi16(-4)));
  store_packed(c, s16, corr, _cvtsh_ss(b.d), 0.f, p);
}

// IQ4_XS: the table's values (-127..113) as signed bytes, scale per 32 (iq4xs_scale - 32).
inline void pack_iq4xs(const std::byte* blk, KPacked* p) {
  const auto& b = *reinterpret_cast<const BlockIQ4XS*>(blk);
  __m256i c[8];
  int16_t s16[16];
  const int16_t corr[16] = {};
  for (int g = 0; g < 8; ++g) {
    c[g] = iq4nl_lookup(q4_0_nibbles(b.qs + 16 * g));
    s16[2 * g] = s16[2 * g + 1] = static_cast<int16_t>(iq4xs_scale(b, g) - 32);
  }
  store_packed(c, s16, corr, _cvtsh_ss(b.d), 0.f, p);
}

// The grid i-quants: blocks.h's groups (|v| <= 62, stored + 64; IQ1's -9..9 + 9) with their
// correction -offset * scale, their per-16 scales, and d * kIqFactor (a power of two: the
// product with the activation's d is the twin's).
template <class Block>
void pack_iq(const std::byte* blk, KPacked* p) {
  constexpr int kOffset = kIqOneBit<Block> ? 9 : 64;
  const auto& b = *reinterpret_cast<const Block*>(blk);
  __m256i c[8];
  int16_t s16[16], corr[16];
  for (int g = 0; g < 8; ++g) {
    const IqGroup q = iq_group(b, g);
    c[g] = _mm256_add_epi8(iq_values<Block>(q), _mm256_set1_epi8(kOffset));
    s16[2 * g] = static_cast<int16_t>(q.scale[0]);
    s16[2 * g + 1] = static_cast<int16_t>(q.scale[1]);
  }
  for (int j = 0; j < 16; ++j) corr[j] = static_cast<int16_t>(-kOffset * s16[j]);
  store_packed(c, s16, corr, _cvtsh_ss(iq_super_scale(b)) * kIqFactor<Block>, 0.f, p);
}

// kSpan: steps whose products add up in int16 before the scales' vpmaddwd (a span never
// straddles steps 3 and 4, whose per-16 scales differ, except Q4_K's 8 under one scale);
// kMins: dmin * the min term; kCorr: the correction adds to the integer sum; kSigned: signed
// values, the sign trick.
struct Q4K {
  static constexpr int kSpan = 8;
  static constexpr bool kMins = true, kCorr = false, kSigned = false;
  static constexpr int64_t kBlockBytes = sizeof(BlockQ4K);
  static void pack(const std::byte* blk, KPacked* p) { pack_q45k<false>(blk, p); }
};
struct Q5K {
  static constexpr int kSpan = 2;
  static constexpr bool kMins = true, kCorr = false, kSigned = false;
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5K);
  static void pack(const std::byte* blk, KPacked* p) { pack_q45k<true>(blk, p); }
};
struct Q6K {
  static constexpr int kSpan = 2;
  static constexpr bool kMins = false, kCorr = true, kSigned = false;
  static constexpr int64_t kBlockBytes = sizeof(BlockQ6K);
  static void pack(const std::byte* blk, KPacked* p) { pack_q6k(blk, p); }
};
struct Q2K {  // 4 * 2 * 3 * 127 < 2^15
  static constexpr int kSpan = 4;
  static constexpr bool kMins = true, kCorr = false, kSigned = false;
  static constexpr int64_t kBlockBytes = sizeof(BlockQ2K);
  static void pack(const std::byte* blk, KPacked* p) { pack_q2k(blk, p); }
};
struct Q3K {  // 4 * 2 * 7 * 127 < 2^15
  static constexpr int kSpan = 4;
  static constexpr bool kMins = false, kCorr = true, kSigned = false;
  static constexpr int64_t kBlockBytes = sizeof(BlockQ3K);
  static void pack(const std::byte* blk, KPacked* p) { pack_q3k(blk, p); }
};
struct IQ4XS {  // 2 * 127 * 127 < 2^15: one step
  static constexpr int kSpan = 1;
  static constexpr bool kMins = false, kCorr = false, kSigned = true;
  static constexpr int64_t kBlockBytes = sizeof(BlockIQ4XS);
  static void pack(const std::byte* blk, KPacked* p) { pack_iq4xs(blk, p); }
};
// Unsigned, as Q3_K: IQ2 / IQ3 0..126, 2 * 126 * 127 < 2^15 (the sign trick's 2 steps ran 10-16 %
// slower in the 134M model's prefill: one more instruction a row, token and step); IQ1 0..18,
// 4 * 2 * 18 * 127 < 2^15
template <class Block>
struct IQ {
  static constexpr int kSpan = kIqOneBit<Block> ? 4 : 1;
  static constexpr bool kMins = false, kCorr = true, kSigned = false;
  static constexpr int64_t kBlockBytes = sizeof(Block);
  static void pack(const std::byte* blk, KPacked* p) { pack_iq<Block>(blk, p); }
};

// VNNI: super-block b of kRows packed rows (p) against kTok tokens: isum[r][t] lane j =
// sum over chunk j of q * x * its scale. one_scale: the chunk's steps share one scale
// (Q4_K, Q5_K), else steps 0-3 and 4-7 take scale[0] and scale[1] (Q6_K).
inline void vnni_block(const KPacked* p, const KAct* const* x, int64_t b, bool one_scale,
                       __m256i (&isum)[kRows][kTok]) {
  for (int h = 0; h < 2; ++h) {
    __m256i acc[kRows][kTok];
    for (int r = 0; r < kRows; ++r) {
      for (int t = 0; t < kTok; ++t) acc[r][t] = _mm256_setzero_si256();
    }
    const int k0 = one_scale ? 0 : 4 * h, k1 = one_scale ? 8 : 4 * h + 4;
#pragma GCC unroll 8
    for (int k = k0; k < k1; ++k) {
      __m256i xv[kTok];
      for (int t = 0; t < kTok; ++t) xv[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[t][b].qs + 32 * k));
      for (int r = 0; r < kRows; ++r) {
        const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(p[r].q + 32 * k));
        for (int t = 0; t < kTok; ++t) acc[r][t] = dot_u8s8(acc[r][t], q, xv[t]);
      }
    }
    for (int r = 0; r < kRows; ++r) {  // lane j's int16 pair (s, s) -> s as int32
      const __m256i s = _mm256_srai_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(p[r].scale[h])), 16);
      for (int t = 0; t < kTok; ++t) {
        const __m256i scaled = _mm256_mullo_epi32(acc[r][t], s);
        isum[r][t] = h == 0 ? scaled : _mm256_add_epi32(isum[r][t], scaled);
      }
    }
    if (one_scale) return;
  }
}

// Without VNNI, the new types: super-block b of kRows packed rows against kTok tokens,
// isum[r][t] lane j = sum over chunk j of q * x * its scale, kSpan steps added in int16
// between the scales' vpmaddwd (signed values: maddubs(|w|, sign(x, w)); |w| packed once per
// row, a second array, ran slower than taking it here).
template <typename L>
inline void generic_block(const KPacked* p, const KAct* const* x, int64_t b, __m256i (&isum)[kRows][kTok]) {
  static_assert(L::kSpan == 1 || L::kSpan == 2 || L::kSpan == 4);
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTok; ++t) isum[r][t] = _mm256_setzero_si256();
  }
#pragma GCC unroll 1
  for (int k0 = 0; k0 < 8; k0 += L::kSpan) {
    __m256i acc[kRows][kTok];
#pragma GCC unroll 4
    for (int k = k0; k < k0 + L::kSpan; ++k) {
      __m256i xv[kTok];
      for (int t = 0; t < kTok; ++t) xv[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[t][b].qs + 32 * k));
      for (int r = 0; r < kRows; ++r) {
        const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(p[r].q + 32 * k));
        const __m256i u = L::kSigned ? _mm256_sign_epi8(q, q) : q;
        for (int t = 0; t < kTok; ++t) {
          const __m256i prod = _mm256_maddubs_epi16(u, L::kSigned ? _mm256_sign_epi8(xv[t], q) : xv[t]);
          if (k == k0) {
            acc[r][t] = prod;
          } else {
            add_epi16_in_place(acc[r][t], prod);
          }
        }
      }
    }
    for (int r = 0; r < kRows; ++r) {
      const __m256i s = _mm256_load_si256(reinterpret_cast<const __m256i*>(p[r].scale[k0 / 4]));
      for (int t = 0; t < kTok; ++t) add_epi32_in_place(isum[r][t], _mm256_madd_epi16(acc[r][t], s));
    }
  }
}

// ---- kRows rows x kTok tokens over every super-block ------------------------------
// w: [nb][kRows] packed super-blocks; x[t]: the token's nb prepared super-blocks.
// Inlined into rows (GCC had kept it a call, which cost the prefill's Q4_K time;
// docs/benchmarks.md).
template <typename L>
__attribute__((always_inline)) inline void tile(const KPacked* w, int64_t nb, const KAct* const* x, float (&out)[kRows][kTok]) {
  __m256 facc[kRows][kTok];
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTok; ++t) facc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    const KPacked* p = w + b * kRows;
    __m256i isum[kRows][kTok];
    if constexpr (kVnni) {  // int32 dots per step; each scale span's sums times its scale (vpmulld)
      vnni_block(p, x, b, L::kSpan == 8, isum);
    } else if constexpr (L::kSpan == 8) {  // the whole super-block in int16, then one vpmaddwd
      __m256i acc[kRows][kTok];
      for (int r = 0; r < kRows; ++r) {
        for (int t = 0; t < kTok; ++t) acc[r][t] = _mm256_setzero_si256();
      }
#pragma GCC unroll 1
      for (int k = 0; k < 8; ++k) {
        __m256i xv[kTok];
        for (int t = 0; t < kTok; ++t) xv[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[t][b].qs + 32 * k));
        for (int r = 0; r < kRows; ++r) {
          const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(p[r].q + 32 * k));
          for (int t = 0; t < kTok; ++t) add_epi16_in_place(acc[r][t], _mm256_maddubs_epi16(q, xv[t]));
        }
      }
      for (int r = 0; r < kRows; ++r) {
        const __m256i s = _mm256_load_si256(reinterpret_cast<const __m256i*>(p[r].scale[0]));
        for (int t = 0; t < kTok; ++t) isum[r][t] = _mm256_madd_epi16(acc[r][t], s);
      }
    } else if constexpr (L::kSpan != 2 || L::kSigned) {  // kSpan steps in int16, then their scale
      generic_block<L>(p, x, b, isum);
    } else {  // two steps at a time
      for (int r = 0; r < kRows; ++r) {
        for (int t = 0; t < kTok; ++t) isum[r][t] = _mm256_setzero_si256();
      }
#pragma GCC unroll 1
      for (int k = 0; k < 8; k += 2) {
        __m256i x0[kTok], x1[kTok];
        for (int t = 0; t < kTok; ++t) {
          x0[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[t][b].qs + 32 * k));
          x1[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[t][b].qs + 32 * k + 32));
        }
        for (int r = 0; r < kRows; ++r) {
          const __m256i q0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(p[r].q + 32 * k));
          const __m256i q1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(p[r].q + 32 * k + 32));
          const __m256i s = _mm256_load_si256(reinterpret_cast<const __m256i*>(p[r].scale[k / 4]));
          for (int t = 0; t < kTok; ++t) {
            const __m256i sum16 = _mm256_add_epi16(_mm256_maddubs_epi16(q0, x0[t]), _mm256_maddubs_epi16(q1, x1[t]));
            add_epi32_in_place(isum[r][t], _mm256_madd_epi16(sum16, s));
          }
        }
      }
    }
    for (int t = 0; t < kTok; ++t) {
      const KAct& a = x[t][b];
      const __m256i bs = _mm256_load_si256(reinterpret_cast<const __m256i*>(a.bsums));
      const __m256 dx = _mm256_broadcast_ss(&a.d);
      for (int r = 0; r < kRows; ++r) {
        const __m256i corr = L::kMins || L::kCorr
                                 ? _mm256_madd_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(p[r].corr)), bs)
                                 : _mm256_setzero_si256();
        // the scalar twin's d * d_x (and dmin * d_x) as lanes, from broadcast loads: a scalar
        // product and a register broadcast per (row, token) cost ~5 % of the Q4_K panel
        const __m256 dwx = _mm256_mul_ps(_mm256_broadcast_ss(&p[r].d), dx);
        if constexpr (L::kMins) {
          const __m256 dmx = _mm256_mul_ps(_mm256_broadcast_ss(&p[r].dmin), dx);
          facc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r][t]), dwx, facc[r][t]);
          facc[r][t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(corr), dmx, facc[r][t]);
        } else if constexpr (L::kCorr) {
          facc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(isum[r][t], corr)), dwx, facc[r][t]);
        } else {
          facc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r][t]), dwx, facc[r][t]);
        }
      }
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTok; ++t) out[r][t] = hsum(facc[r][t]);
  }
}

// A prefill's prepared activations (480 KiB for 512 tokens at 768 columns, 1.25 MiB at 2048) go
// in token blocks, kPackRows rows at a time (ymm_common.h's panel blocking, as the Q4_0 panels).
// kPackRows rows' packs of the super-blocks
int64_t panel_bytes(int64_t cols) { return cols / kQKK * kPackRows * static_cast<int64_t>(sizeof(KPacked)); }

// kRows rows w (nr of them real) packed into packed[b * kRows + r]
template <typename L>
void pack_rows(const std::byte* w, int64_t w_row_bytes, int nr, int64_t nb, KPacked* packed) {
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < kRows; ++r) {
      KPacked* p = packed + b * kRows + r;
      if (r < nr) {
        L::pack(w + r * w_row_bytes + b * L::kBlockBytes, p);
      } else {
        std::memset(static_cast<void*>(p), 0, sizeof(KPacked));
      }
    }
  }
}

// One pack of kRows rows (nr real) over tokens [t0, t1) (tokens past n_tokens: zero padding
// rows): y[t * y_stride + r].
template <typename L>
void run_pack(const KPacked* packed, int64_t nb, const std::byte* acts, int64_t row_bytes, int64_t t0, int64_t t1,
              int64_t n_tokens, int nr, float* y, int64_t y_stride) {
  for (int64_t t = t0; t < t1; t += kTok) {
    const KAct* x[kTok];
    for (int i = 0; i < kTok; ++i) x[i] = reinterpret_cast<const KAct*>(acts + (t + i) * row_bytes);
    float out[kRows][kTok];
    tile<L>(packed, nb, x, out);
    const int nt = static_cast<int>(std::min<int64_t>(kTok, n_tokens - t));
    for (int i = 0; i < nt; ++i) {
      for (int r = 0; r < nr; ++r) y[(t + i) * y_stride + r] = out[r][i];
    }
  }
}

template <typename L>
void rows(const std::byte* w, int64_t w_row_bytes, int64_t n_rows, const std::byte* acts, int64_t n_tokens,
          int64_t cols, float* y, int64_t y_stride) {
  const int64_t nb = cols / kQKK, row_bytes = act_row_bytes(cols);
  const int64_t tok_block = panel_token_block(row_bytes, kTok);
  auto* packed = reinterpret_cast<KPacked*>(panel_scratch(static_cast<size_t>(panel_bytes(cols))));
  const auto n_real = [&](int64_t r0) { return static_cast<int>(std::min<int64_t>(kRows, n_rows - r0)); };
  if (!panel_blocked(n_tokens, tok_block)) {  // one pack at a time
    for (int64_t r0 = 0; r0 < n_rows; r0 += kRows) {
      pack_rows<L>(w + r0 * w_row_bytes, w_row_bytes, n_real(r0), nb, packed);
      run_pack<L>(packed, nb, acts, row_bytes, 0, n_tokens, n_tokens, n_real(r0), y + r0, y_stride);
    }
    return;
  }
  for (int64_t rb0 = 0; rb0 < n_rows; rb0 += kPackRows) {
    const int n_packs = static_cast<int>((std::min<int64_t>(kPackRows, n_rows - rb0) + kRows - 1) / kRows);
    for (int j = 0; j < n_packs; ++j) {
      const int64_t r0 = rb0 + j * kRows;
      pack_rows<L>(w + r0 * w_row_bytes, w_row_bytes, n_real(r0), nb, packed + j * nb * kRows);
    }
    for (int64_t tb0 = 0; tb0 < n_tokens; tb0 += tok_block) {
      const int64_t tb1 = std::min(n_tokens, tb0 + tok_block);
      for (int j = 0; j < n_packs; ++j) {
        const int64_t r0 = rb0 + j * kRows;
        run_pack<L>(packed + j * nb * kRows, nb, acts, row_bytes, tb0, tb1, n_tokens, n_real(r0), y + r0, y_stride);
      }
    }
  }
}

template <typename L>
PanelKernel entry() {
  return {act_bytes, prepare, rows<L>, panel_bytes};
}

// This build's Q4_K / Q5_K / Q6_K entries.
void add_kquant_panels(PanelKernels* k) {
  static_assert(kPanelTokens % kTok == 0);
  k->k[static_cast<int>(DType::kQ4_K)] = entry<Q4K>();
  k->k[static_cast<int>(DType::kQ5_K)] = entry<Q5K>();
  k->k[static_cast<int>(DType::kQ6_K)] = entry<Q6K>();
}

// The plain AVX2 build's further types. The AVX2-VNNI table takes these (it starts from AVX2's
// panels); the AVX-512 table runs its row kernels for them (vnni_block has no sign trick, and
// no CPU with VNNI has measured these panels). Inline, as the packers above: the VNNI builds
// leave them unused.
inline void add_more_superblock_panels(PanelKernels* k) {
  k->k[static_cast<int>(DType::kQ2_K)] = entry<Q2K>();
  k->k[static_cast<int>(DType::kQ3_K)] = entry<Q3K>();
  k->k[static_cast<int>(DType::kIQ4_XS)] = entry<IQ4XS>();
  k->k[static_cast<int>(DType::kIQ2_XXS)] = entry<IQ<BlockIQ2XXS>>();
  k->k[static_cast<int>(DType::kIQ2_XS)] = entry<IQ<BlockIQ2XS>>();
  k->k[static_cast<int>(DType::kIQ2_S)] = entry<IQ<BlockIQ2S>>();
  k->k[static_cast<int>(DType::kIQ3_XXS)] = entry<IQ<BlockIQ3XXS>>();
  k->k[static_cast<int>(DType::kIQ3_S)] = entry<IQ<BlockIQ3S>>();
  k->k[static_cast<int>(DType::kIQ1_S)] = entry<IQ<BlockIQ1S>>();
  k->k[static_cast<int>(DType::kIQ1_M)] = entry<IQ<BlockIQ1M>>();
}

}  // namespace

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
void add_avx512_ymm_kquant_panels(PanelKernels* k) { add_kquant_panels(k); }
#elif defined(__AVXVNNI__)
void add_avx2_vnni_kquant_panels(PanelKernels* k) { add_kquant_panels(k); }
#else
void avx2_quantize_q8_k(const float* x, BlockQ8K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b) y[b].d = quantize_q8k_block(x + b * kQKK, y[b].qs, y[b].bsums);
}

void add_avx2_kquant_panels(PanelKernels* k) {
  add_kquant_panels(k);
  add_more_superblock_panels(k);
}
#endif

}  // namespace plimsoll::kernels
