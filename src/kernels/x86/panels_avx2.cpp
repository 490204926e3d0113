// AVX2 panel kernels for Q8_0 / Q4_0 (and F32 / F16 / BF16, at the end) weights over
// batches of tokens (prefill, batched decode), for CPUs without AVX-512 (built with
// AVX2 + FMA + F16C only).
// Blocks go eight at a time ("groups"), one block per int32 lane: step k
// (0..7) of a group holds bytes 4k..4k+3 of each of its 8 blocks, so a lane
// sums one block's products over the 8 steps and the block scales apply once
// per group as a vector, not once per block (no horizontal sums in the loop).
// The activations are quantized to Q8_0 once per call (exactly as quantize_q8_0)
// and transposed into that
// layout; each thread packs kRows weight rows at a time into a per-thread
// scratch (transposed the same way, Q4_0 unpacked to nibbles), then runs them over
// every token, kTok at a time.
//   Q4_0: maddubs(nibble u8, x s8) summed in int16 over the 8 steps (<= 16 *
//         15 * 127 < 2^15), then -8 * sum(x) per block (prepared) in int32.
//   Q8_0: both sides widened to int16 once (the activations when prepared, the rows
//         when packed), so a group is 16 steps of 2 elements per block and each step
//         one madd(w, x) added in int32. The sign trick (maddubs(|w|, sign(x, w))
//         widened by madd) took one more instruction per 32 products, and on Zen 4
//         vpsignb runs on the two pipes that multiply (docs/benchmarks.md).
// The same source is built a second time with AVX-VNNI (panels_avxvnni.cpp,
// __AVXVNNI__ defined; avx2_vnni_panel_kernels()) and a third with AVX-512 VNNI + VL
// (panels_avx512_ymm.cpp: the EVEX form of the same 256-bit vpdpbusd;
// avx512_ymm_panel_kernels()), where each step is one vpdpbusd:
//   Q4_0: dpbusd(nibble u8, x s8) in int32, then the same -8 * sum(x) per block.
//   Q8_0: the activations offset to u8 (x + 128, i.e. x ^ 0x80: Q8_0 values are in
//         [-127, 127]) times w s8, then -128 * sum(w) per block (packed with the rows).
// The plain AVX2 build also packs Q4_1 / Q5_0 / Q5_1 as Q4_0 (their values 0..15 or 0..31 as
// u8; the 5-bit ones add up 4 steps in int16, 8 * 31 * 127 < 2^15, then vpmaddwd; Q5_0's offset
// is -16 * sum(x); the mins add m * d_x * sum(x), sum(x) from the prepared -8 * sum(x)) and
// IQ4_NL as Q8_0 (its table's values, int16 pairs).
// The integer sums equal the scalar twin's; only the f32 summation order differs.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/blocks.h"
#include "kernels/layout_bytes.h"
#include "kernels/matmul_impl.h"
#include "kernels/scratch.h"
#include "kernels/x86/ymm_common.h"
#include "kernels/x86/ymm_unpack.h"

namespace plimsoll::kernels {
namespace {

#if defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
#define PLIMSOLL_PANELS_VNNI 1
constexpr bool kVnni = true;
#else
#define PLIMSOLL_PANELS_VNNI 0
constexpr bool kVnni = false;
#endif

// acc += the 4-byte dots of u8 by s8 in each int32 lane (VNNI builds only)
inline __m256i dot_u8s8(__m256i acc, __m256i u8, __m256i s8) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, u8, s8);
#elif defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(acc, u8, s8);
#else
  (void)u8, (void)s8;
  return acc;  // never called: every use is behind kVnni
#endif
}

constexpr int kGroup = 8;  // blocks per group (int32 lanes)
constexpr int kRows = 4;   // weight rows packed and run together
constexpr int kTok = 2;    // tokens per register tile

int64_t n_groups(int64_t cols) { return (cols / kQK + kGroup - 1) / kGroup; }
int64_t padded_tokens(int64_t n) { return (n + kPanelTokens - 1) / kPanelTokens * kPanelTokens; }

// One token's group of 8 blocks, prepared (blocks past the row's end: zeros).
struct ActGroup {
  int8_t qs[kGroup][32];  // [step k][4 * block j + i] = x_j[4k + i]
  float d[kGroup];        // block scales (the Q8_0 f16 scale, as f32)
  int32_t corr[kGroup];   // -8 * sum of block j's values (Q4_0's nibble offset)
};
static_assert(sizeof(ActGroup) == 320);

// bytes of n_tokens prepared rows (padded to whole token tiles) in layout Act
template <typename Act>
int64_t act_bytes(int64_t n_tokens, int64_t cols) {
  return padded_tokens(n_tokens) * n_groups(cols) * static_cast<int64_t>(sizeof(Act));
}

// ---- activations -------------------------------------------------------------
// Round half away from zero (std::round) of values well inside int32 range.
inline __m256 round_away(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 sign = _mm256_and_ps(v, _mm256_set1_ps(-0.f));
  const __m256 frac = _mm256_andnot_ps(_mm256_set1_ps(-0.f), _mm256_sub_ps(v, t));  // exact
  const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm256_add_ps(t, _mm256_and_ps(up, _mm256_or_ps(_mm256_set1_ps(1.f), sign)));
}

// One block of 32 floats as quantize_q8_0 does it (d = amax / 127 rounded to f16,
// values round(x / d)): the 32 int8 in element order; *d_out the scale as f32.
inline __m256i quantize_block(const float* x, float* d_out) {
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(_mm256_set1_ps(-0.f), v[i]));
  }
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  const float d = _mm_cvtss_f32(m) / 127.f;
  const float id = d != 0.f ? 1.f / d : 0.f;
  *d_out = _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  __m256i q[4];
  for (int i = 0; i < 4; ++i) q[i] = _mm256_cvttps_epi32(round_away(_mm256_mul_ps(v[i], _mm256_set1_ps(id))));
  // packs work per 128-bit lane: [0 1 | 0 1] -> i16 [q0lo q1lo | q0hi q1hi], then bytes; fix the order
  const __m256i w01 = _mm256_packs_epi32(q[0], q[1]), w23 = _mm256_packs_epi32(q[2], q[3]);
  const __m256i b = _mm256_packs_epi16(w01, w23);  // dwords: 0 2 4 6 | 1 3 5 7 of the element order
  return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Token tiles [tt0, tt1) of x quantized block by block: for each group of 8 blocks,
// store(v, d, out) gets the blocks' int8 values in element order and their scales
// (zeros past the row's last block); padding tokens are zeroed.
template <typename Act, typename Store>
void prepare_groups(const float* x, int64_t n_tokens, int64_t cols, int64_t tt0, int64_t tt1, std::byte* dst,
                    Store store) {
  const int64_t nb = cols / kQK, ng = n_groups(cols), row_bytes = ng * static_cast<int64_t>(sizeof(Act));
  for (int64_t t = tt0 * kPanelTokens; t < tt1 * kPanelTokens; ++t) {
    auto* out = reinterpret_cast<Act*>(dst + t * row_bytes);
    if (t >= n_tokens) {  // padding of the last token tile
      std::memset(static_cast<void*>(out), 0, static_cast<size_t>(row_bytes));
      continue;
    }
    for (int64_t g = 0; g < ng; ++g) {
      __m256i v[kGroup];
      float d[kGroup];
      for (int j = 0; j < kGroup; ++j) {
        const int64_t b = g * kGroup + j;
        d[j] = 0.f;
        v[j] = b < nb ? quantize_block(x + t * cols + b * kQK, &d[j]) : _mm256_setzero_si256();
      }
      store(v, d, out[g]);
    }
  }
}

// kOffsetU8: the values stored as x + 128 (u8), for the VNNI Q8_0 tile.
template <bool kOffsetU8>
void prepare(const float* x, int64_t n_tokens, int64_t cols, int64_t tt0, int64_t tt1, std::byte* dst) {
  prepare_groups<ActGroup>(x, n_tokens, cols, tt0, tt1, dst, [](__m256i (&v)[kGroup], const float* d, ActGroup& a) {
    for (int j = 0; j < kGroup; ++j) {
      a.d[j] = d[j];
      a.corr[j] = -8 * hsum_i32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), v[j]), _mm256_set1_epi16(1)));
    }
    transpose8x8(v);
    const __m256i offset = _mm256_set1_epi8(kOffsetU8 ? -128 : 0);  // x ^ 0x80 == x + 128 as u8
    for (int k = 0; k < kGroup; ++k) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(a.qs[k]), _mm256_xor_si256(v[k], offset));
    }
  });
}

// ---- weights: kRows rows packed per group --------------------------------------
// Q4_0: u8 = nibbles; VNNI Q8_0: s8 = w and wcorr = -128 * sum(w) (u8 unused). (Q8_0
// without VNNI: PackedGroup16 below.)
struct PackedGroup {
  uint8_t u8[kGroup][kRows][32];  // [step][row][4 * block + i]
  int8_t s8[kGroup][kRows][32];   // VNNI Q8_0 only
  float d[kRows][kGroup];         // block scales
  int32_t wcorr[kRows][kGroup];   // VNNI Q8_0 only
  float m[kRows][kGroup];         // Q4_1 / Q5_1: block mins
};

// A block's 32 values in element order: Q8_0 / IQ4_NL signed, the others unsigned.
inline __m256i unpack_block(const BlockQ8_0& b) { return load32(b.qs); }
inline __m256i unpack_block(const BlockQ4_0& b) { return q4_0_nibbles(b.qs); }
inline __m256i unpack_block(const BlockQ4_1& b) { return q4_0_nibbles(b.qs); }
inline __m256i unpack_block(const BlockQ5_0& b) { return q5_values(b.qs, b.qh); }
inline __m256i unpack_block(const BlockQ5_1& b) { return q5_values(b.qs, b.qh); }
inline __m256i unpack_block(const BlockIQ4NL& b) { return iq4nl_lookup(q4_0_nibbles(b.qs)); }

// The u8 path's blocks: kSpan steps add up in int16 before vpmaddwd (16 * 15 * 127 and
// 8 * 31 * 127 < 2^15), the prepared -8 * sum(x) times kCorr is their offset (Q4_0: -8,
// Q5_0: -16), kMin: value = q * d + m.
template <typename Block> struct U8;
template <> struct U8<BlockQ4_0> { static constexpr int kSpan = 8, kCorr = 1; static constexpr bool kMin = false; };
template <> struct U8<BlockQ4_1> { static constexpr int kSpan = 8, kCorr = 0; static constexpr bool kMin = true; };
template <> struct U8<BlockQ5_0> { static constexpr int kSpan = 4, kCorr = 2; static constexpr bool kMin = false; };
template <> struct U8<BlockQ5_1> { static constexpr int kSpan = 4, kCorr = 0; static constexpr bool kMin = true; };
template <> struct U8<BlockQ8_0> { static constexpr int kSpan = 8, kCorr = 0; static constexpr bool kMin = false; };

// Group g of weight row r (of n_rows): its blocks' values in element order and their
// scales into d, their mins into m where the block has one (zeros past the row's last
// block and for rows past n_rows).
template <typename Block>
inline void load_group(const std::byte* w, int64_t w_row_bytes, int r, int n_rows, int64_t g, int64_t cols,
                       __m256i (&v)[kGroup], float* d, float* m = nullptr) {
  const auto* blk = reinterpret_cast<const Block*>(w + r * w_row_bytes);
  for (int j = 0; j < kGroup; ++j) {
    const int64_t b = g * kGroup + j;
    const bool live = r < n_rows && b < cols / kQK;
    v[j] = live ? unpack_block(blk[b]) : _mm256_setzero_si256();
    d[j] = live ? _cvtsh_ss(blk[b].d) : 0.f;
    if constexpr (requires { blk[b].m; }) m[j] = live ? _cvtsh_ss(blk[b].m) : 0.f;
  }
}

template <typename Block>
void pack_rows(const std::byte* w, int64_t w_row_bytes, int n_rows, int64_t cols, PackedGroup* out) {
  for (int64_t g = 0; g < n_groups(cols); ++g) {
    PackedGroup& p = out[g];
    for (int r = 0; r < kRows; ++r) {
      __m256i v[kGroup];
      load_group<Block>(w, w_row_bytes, r, n_rows, g, cols, v, p.d[r], p.m[r]);
      transpose8x8(v);
      if constexpr (kVnni && std::is_same_v<Block, BlockQ8_0>) {
        __m256i sum = _mm256_setzero_si256();  // lane j: sum of block j's 32 values
        for (int k = 0; k < kGroup; ++k) {
          _mm256_store_si256(reinterpret_cast<__m256i*>(p.s8[k][r]), v[k]);
          sum = dot_u8s8(sum, _mm256_set1_epi8(1), v[k]);
        }
        _mm256_store_si256(reinterpret_cast<__m256i*>(p.wcorr[r]), _mm256_sub_epi32(_mm256_setzero_si256(),
                                                                                   _mm256_slli_epi32(sum, 7)));
        continue;
      }
      for (int k = 0; k < kGroup; ++k) _mm256_store_si256(reinterpret_cast<__m256i*>(p.u8[k][r]), v[k]);
    }
  }
}

// ---- kRows rows x kTok tokens over every group ----------------------------------
template <typename Block>
inline void tile(const PackedGroup* w, int64_t ng, const ActGroup* const* x, float (&out)[kRows][kTok]) {
  constexpr bool kQ8 = std::is_same_v<Block, BlockQ8_0>;
  static_assert(kVnni || !kQ8, "Q8_0 without VNNI runs tile16");
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 facc[kRows][kTok];
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTok; ++t) facc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t g = 0; g < ng; ++g) {
    const PackedGroup& p = w[g];
    __m256i iacc[kRows][kTok];
    for (int r = 0; r < kRows; ++r) {
      for (int t = 0; t < kTok; ++t) {
        // VNNI Q8_0: the sums start from -128 * sum(w) (measured: ~10 % over adding it at the end;
        // Q4_0's -8 * sum(x) the same way lost as much, so it is added at the end)
        if constexpr (kVnni && kQ8) {
          iacc[r][t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(p.wcorr[r]));
        } else {
          iacc[r][t] = _mm256_setzero_si256();
        }
      }
    }
    if constexpr (kVnni) {  // one vpdpbusd per product vector (Q8_0: x + 128 by w), all 8 steps unrolled
#pragma GCC unroll 8
      for (int k = 0; k < kGroup; ++k) {
        __m256i xv[kTok];
        for (int t = 0; t < kTok; ++t) xv[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[t][g].qs[k]));
        for (int r = 0; r < kRows; ++r) {
          const void* wp = kQ8 ? static_cast<const void*>(p.s8[k][r]) : static_cast<const void*>(p.u8[k][r]);
          const __m256i w8 = _mm256_load_si256(static_cast<const __m256i*>(wp));
          for (int t = 0; t < kTok; ++t) iacc[r][t] = kQ8 ? dot_u8s8(iacc[r][t], xv[t], w8) : dot_u8s8(iacc[r][t], w8, xv[t]);
        }
      }
    } else if constexpr (U8<Block>::kSpan == 8) {  // Q4_0, Q4_1, one step at a time: fully unrolled,
                                                   // GCC hoists every product ahead of the sums and spills them
#pragma GCC unroll 1
      for (int k = 0; k < kGroup; ++k) {
        __m256i xv[kTok];
        for (int t = 0; t < kTok; ++t) xv[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[t][g].qs[k]));
        for (int r = 0; r < kRows; ++r) {
          const __m256i u = _mm256_load_si256(reinterpret_cast<const __m256i*>(p.u8[k][r]));
          for (int t = 0; t < kTok; ++t) add_epi16_in_place(iacc[r][t], _mm256_maddubs_epi16(u, xv[t]));
        }
      }
      for (int r = 0; r < kRows; ++r) {
        for (int t = 0; t < kTok; ++t) iacc[r][t] = _mm256_madd_epi16(iacc[r][t], ones);
      }
    } else {  // Q5_0, Q5_1: steps 0-3 and 4-7 each in int16, then into the int32 sums
#pragma GCC unroll 1
      for (int k0 = 0; k0 < kGroup; k0 += U8<Block>::kSpan) {
        __m256i acc16[kRows][kTok];
        for (int k = k0; k < k0 + U8<Block>::kSpan; ++k) {
          __m256i xv[kTok];
          for (int t = 0; t < kTok; ++t) xv[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[t][g].qs[k]));
          for (int r = 0; r < kRows; ++r) {
            const __m256i u = _mm256_load_si256(reinterpret_cast<const __m256i*>(p.u8[k][r]));
            for (int t = 0; t < kTok; ++t) {
              const __m256i prod = _mm256_maddubs_epi16(u, xv[t]);
              if (k == k0) {
                acc16[r][t] = prod;
              } else {
                add_epi16_in_place(acc16[r][t], prod);
              }
            }
          }
        }
        for (int r = 0; r < kRows; ++r) {
          for (int t = 0; t < kTok; ++t) add_epi32_in_place(iacc[r][t], _mm256_madd_epi16(acc16[r][t], ones));
        }
      }
    }
    for (int t = 0; t < kTok; ++t) {
      const __m256 dx = _mm256_load_ps(x[t][g].d);
      const __m256i corr = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[t][g].corr));
      for (int r = 0; r < kRows; ++r) {
        __m256i i32 = iacc[r][t];  // Q8_0: complete (VNNI: its correction included)
        if constexpr (U8<Block>::kCorr == 1) i32 = _mm256_add_epi32(i32, corr);
        if constexpr (U8<Block>::kCorr == 2) i32 = _mm256_add_epi32(i32, _mm256_add_epi32(corr, corr));
        const __m256 scale = _mm256_mul_ps(_mm256_load_ps(p.d[r]), dx);
        facc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i32), scale, facc[r][t]);
        if constexpr (U8<Block>::kMin) {  // m * d_x * sum(x), sum(x) = corr / -8 (exact)
          const __m256 mx = _mm256_mul_ps(_mm256_load_ps(p.m[r]), _mm256_mul_ps(dx, _mm256_set1_ps(-0.125f)));
          facc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(corr), mx, facc[r][t]);
        }
      }
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTok; ++t) out[r][t] = hsum(facc[r][t]);
  }
}

// The panel's rows, packed (pack, kRows rows a call) into the per-thread scratch and run
// over the tokens kTok at a time (run_tile); Packed / Act are the layouts. A prefill's
// prepared activations (~800 KiB for 512 tokens at 768 columns) go in token blocks
// (ymm_common.h's panel blocking).

// One pack of kRows rows (nr of them real) over tokens [t0, t1) (t1 <= n_tokens rounded
// up to kTok: tokens past n_tokens are zero padding rows): y[t * y_stride + r]. Not inlined
// into panel_rows, whose loops would crowd the tile's registers (GCC then spilled its
// integer sums, not the float ones, at half the speed).
template <typename Packed, typename Act, auto run_tile>
[[gnu::noinline]] void run_pack(const Packed* packed, int64_t ng, const std::byte* acts, int64_t row_bytes,
                                int64_t t0, int64_t t1, int64_t n_tokens, int nr, float* y, int64_t y_stride) {
  for (int64_t t = t0; t < t1; t += kTok) {
    const Act* x[kTok];
    for (int i = 0; i < kTok; ++i) x[i] = reinterpret_cast<const Act*>(acts + (t + i) * row_bytes);
    float out[kRows][kTok];
    run_tile(packed, ng, x, out);
    const int nt = static_cast<int>(std::min<int64_t>(kTok, n_tokens - t));
    for (int i = 0; i < nt; ++i) {
      for (int r = 0; r < nr; ++r) y[(t + i) * y_stride + r] = out[r][i];
    }
  }
}

// kPackRows rows packed at a time
template <typename Packed>
int64_t packed_panel_bytes(int64_t cols) {
  return kPackRows / kRows * n_groups(cols) * static_cast<int64_t>(sizeof(Packed));
}

template <typename Packed, typename Act, auto pack, auto run_tile>
void panel_rows(const std::byte* w, int64_t w_row_bytes, int64_t n_rows, const std::byte* acts, int64_t n_tokens,
                int64_t cols, float* y, int64_t y_stride) {
  const int64_t ng = n_groups(cols), row_bytes = ng * static_cast<int64_t>(sizeof(Act));
  const int64_t tok_block = panel_token_block(row_bytes, kTok);
  auto* packed = reinterpret_cast<Packed*>(panel_scratch(static_cast<size_t>(packed_panel_bytes<Packed>(cols))));
  if (!panel_blocked(n_tokens, tok_block)) {  // one pack at a time, in L1
    for (int64_t r0 = 0; r0 < n_rows; r0 += kRows) {
      const int nr = static_cast<int>(std::min<int64_t>(kRows, n_rows - r0));
      pack(w + r0 * w_row_bytes, w_row_bytes, nr, cols, packed);
      run_pack<Packed, Act, run_tile>(packed, ng, acts, row_bytes, 0, n_tokens, n_tokens, nr, y + r0, y_stride);
    }
    return;
  }
  for (int64_t rb0 = 0; rb0 < n_rows; rb0 += kPackRows) {
    const int n_packs = static_cast<int>((std::min<int64_t>(kPackRows, n_rows - rb0) + kRows - 1) / kRows);
    for (int j = 0; j < n_packs; ++j) {
      const int64_t r0 = rb0 + j * kRows;
      pack(w + r0 * w_row_bytes, w_row_bytes, static_cast<int>(std::min<int64_t>(kRows, n_rows - r0)), cols,
           packed + j * ng);
    }
    for (int64_t tb0 = 0; tb0 < n_tokens; tb0 += tok_block) {
      const int64_t tb1 = std::min(n_tokens, tb0 + tok_block);
      for (int j = 0; j < n_packs; ++j) {
        const int64_t r0 = rb0 + j * kRows;
        run_pack<Packed, Act, run_tile>(packed + j * ng, ng, acts, row_bytes, tb0, tb1, n_tokens,
                                        static_cast<int>(std::min<int64_t>(kRows, n_rows - r0)), y + r0, y_stride);
      }
    }
  }
}

template <typename Block>
void rows(const std::byte* w, int64_t w_row_bytes, int64_t n_rows, const std::byte* acts, int64_t n_tokens,
          int64_t cols, float* y, int64_t y_stride) {
  panel_rows<PackedGroup, ActGroup, pack_rows<Block>, tile<Block>>(w, w_row_bytes, n_rows, acts, n_tokens, cols, y,
                                                                   y_stride);
}

#if !PLIMSOLL_PANELS_VNNI
// ---- Q8_0 without VNNI: int16 pairs -----------------------------------------------
// Step s (0..15) of a group: elements 2s, 2s+1 of each of its 8 blocks as int16, one block
// per int32 lane, so madd(w, x) adds a lane's two products into that block's int32 sum.
constexpr int kSteps16 = 2 * kGroup;

struct ActGroup16 {
  int16_t qs[kSteps16][16];  // [step s][2 * block j + i] = x_j[2s + i]
  float d[kGroup];           // block scales (the Q8_0 f16 scale, as f32)
};
static_assert(sizeof(ActGroup16) == kAvx2ActGroupBytes);

struct PackedGroup16 {
  int16_t w[kSteps16][kRows][16];  // [step][row][2 * block + i]
  float d[kRows][kGroup];          // block scales
};


// v[j]: block j's 32 values (int8, element order) -> out[s] = step s of the group.
inline void to_steps16(const __m256i (&v)[kGroup], __m256i (&out)[kSteps16]) {
  __m256i a[kGroup], b[kGroup];  // elements 0..15 and 16..31 as int16: 8 int32 lanes of pairs
  for (int j = 0; j < kGroup; ++j) {
    a[j] = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(v[j]));
    b[j] = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(v[j], 1));
  }
  transpose8x8(a);
  transpose8x8(b);
  for (int s = 0; s < kGroup; ++s) {
    out[s] = a[s];
    out[kGroup + s] = b[s];
  }
}

void prepare16(const float* x, int64_t n_tokens, int64_t cols, int64_t tt0, int64_t tt1, std::byte* dst) {
  prepare_groups<ActGroup16>(x, n_tokens, cols, tt0, tt1, dst, [](__m256i (&v)[kGroup], const float* d, ActGroup16& a) {
    __m256i steps[kSteps16];
    to_steps16(v, steps);
    for (int j = 0; j < kGroup; ++j) a.d[j] = d[j];
    for (int k = 0; k < kSteps16; ++k) _mm256_store_si256(reinterpret_cast<__m256i*>(a.qs[k]), steps[k]);
  });
}

template <typename Block>
void pack_rows16(const std::byte* w, int64_t w_row_bytes, int n_rows, int64_t cols, PackedGroup16* out) {
  for (int64_t g = 0; g < n_groups(cols); ++g) {
    PackedGroup16& p = out[g];
    for (int r = 0; r < kRows; ++r) {
      __m256i v[kGroup], steps[kSteps16];
      load_group<Block>(w, w_row_bytes, r, n_rows, g, cols, v, p.d[r]);
      to_steps16(v, steps);
      for (int k = 0; k < kSteps16; ++k) _mm256_store_si256(reinterpret_cast<__m256i*>(p.w[k][r]), steps[k]);
    }
  }
}

inline void tile16(const PackedGroup16* w, int64_t ng, const ActGroup16* const* x, float (&out)[kRows][kTok]) {
  __m256 facc[kRows][kTok];
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTok; ++t) facc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t g = 0; g < ng; ++g) {
    const PackedGroup16& p = w[g];
    __m256i iacc[kRows][kTok];
    for (int r = 0; r < kRows; ++r) {
      for (int t = 0; t < kTok; ++t) iacc[r][t] = _mm256_setzero_si256();
    }
#pragma GCC unroll 1
    for (int k = 0; k < kSteps16; ++k) {
      __m256i xv[kTok];
      for (int t = 0; t < kTok; ++t) xv[t] = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[t][g].qs[k]));
      for (int r = 0; r < kRows; ++r) {
        __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(p.w[k][r]));
        __asm__("" : "+x"(wv));  // one load for both tokens (GCC would fold it into each madd)
        for (int t = 0; t < kTok; ++t) add_epi32_in_place(iacc[r][t], _mm256_madd_epi16(wv, xv[t]));
      }
    }
    for (int t = 0; t < kTok; ++t) {
      const __m256 dx = _mm256_load_ps(x[t][g].d);
      for (int r = 0; r < kRows; ++r) {
        const __m256 scale = _mm256_mul_ps(_mm256_load_ps(p.d[r]), dx);
        facc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(iacc[r][t]), scale, facc[r][t]);
      }
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTok; ++t) out[r][t] = hsum(facc[r][t]);
  }
}

template <typename Block>
void rows16(const std::byte* w, int64_t w_row_bytes, int64_t n_rows, const std::byte* acts, int64_t n_tokens,
            int64_t cols, float* y, int64_t y_stride) {
  panel_rows<PackedGroup16, ActGroup16, pack_rows16<Block>, tile16>(w, w_row_bytes, n_rows, acts, n_tokens, cols, y,
                                                                    y_stride);
}

#endif  // !PLIMSOLL_PANELS_VNNI

// ---- float weights (F32 / F16 / BF16) -------------------------------------------
// Activations: x copied with columns zero-padded to a multiple of 8 (and the token
// tile's padding rows zeroed). Weight rows are widened to f32 into the per-thread
// scratch and meet kFTok tokens at a time, in one of two register tiles:
//  - batches of kFOuterMinTokens+ tokens: outer products. kFPanelRows rows widened
//    column by column (packed[c * kFPanelRows + r]); per column, the panel's 3
//    vectors of rows times each token's element broadcast, so each accumulator holds
//    8 rows' sums for one token and is stored to y as is. A 3 + 4 row dot tile (below)
//    of 2048-column rows (56 KiB) did not stay in a 32 KiB L1 between token tiles
//    (docs/benchmarks.md).
//  - smaller batches: dots. kFRows rows widened as they are (same padding), tiles of
//    kFRows rows x kFTok tokens, 8 columns per FMA, one horizontal sum per output; the
//    outer tile's column-by-column packing (8 x 8 transposes) costs more than it
//    saves there (up to about 32 tokens).
constexpr int kFRows = 3;
constexpr int kFTok = 4;
constexpr int kFPanelRows = 24;  // 3 vectors of 8 rows
constexpr int64_t kFOuterMinTokens = 32;

int64_t padded_cols(int64_t cols) { return (cols + 7) / 8 * 8; }
int64_t float_act_bytes(int64_t n_tokens, int64_t cols) {
  return padded_tokens(n_tokens) * padded_cols(cols) * static_cast<int64_t>(sizeof(float));
}

void float_prepare(const float* x, int64_t n_tokens, int64_t cols, int64_t tt0, int64_t tt1, std::byte* dst) {
  const int64_t pc = padded_cols(cols);
  for (int64_t t = tt0 * kPanelTokens; t < tt1 * kPanelTokens; ++t) {
    float* out = reinterpret_cast<float*>(dst) + t * pc;
    if (t < n_tokens) {
      std::memcpy(out, x + t * cols, static_cast<size_t>(cols) * sizeof(float));
      std::fill(out + cols, out + pc, 0.0f);
    } else {
      std::fill(out, out + pc, 0.0f);
    }
  }
}

struct WidenF32 {
  static __m256 load8(const std::byte* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static float one(const std::byte* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  static constexpr int kBytes = 4;
};
struct WidenF16 {
  static __m256 load8(const std::byte* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static float one(const std::byte* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
  }
  static constexpr int kBytes = 2;
};
struct WidenBF16 {  // exact widening (<< 16), as the scalar twin
  static __m256 load8(const std::byte* p) {
    const __m256i u32 = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u32, 16));
  }
  static float one(const std::byte* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static constexpr int kBytes = 2;
};

// packed[r * pc + c] = w row r, column c as f32 (zeros past cols and past n_rows).
template <typename L>
void widen_rows(const std::byte* w, int64_t w_row_bytes, int n_rows, int64_t cols, float* packed) {
  const int64_t pc = padded_cols(cols);
  for (int r = 0; r < kFRows; ++r) {
    float* out = packed + r * pc;
    if (r >= n_rows) {
      std::fill(out, out + pc, 0.0f);
      continue;
    }
    const std::byte* row = w + r * w_row_bytes;
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8) _mm256_store_ps(out + c, L::load8(row + c * L::kBytes));
    for (; c < cols; ++c) out[c] = L::one(row + c * L::kBytes);
    std::fill(out + cols, out + pc, 0.0f);
  }
}

inline void float_tile(const float* w, int64_t pc, const float* x, float (&out)[kFRows][kFTok]) {
  __m256 acc[kFRows][kFTok];
  for (int r = 0; r < kFRows; ++r) {
    for (int t = 0; t < kFTok; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t c = 0; c < pc; c += 8) {
    __m256 wv[kFRows];
    for (int r = 0; r < kFRows; ++r) wv[r] = _mm256_load_ps(w + r * pc + c);
    for (int t = 0; t < kFTok; ++t) {
      const __m256 xv = _mm256_load_ps(x + t * pc + c);
      for (int r = 0; r < kFRows; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  for (int r = 0; r < kFRows; ++r) {
    for (int t = 0; t < kFTok; ++t) out[r][t] = hsum(acc[r][t]);
  }
}

// packed[c * kFPanelRows + r] = w row r, column c as f32 (zeros for rows past n_rows).
template <typename L>
void widen_panel(const std::byte* w, int64_t w_row_bytes, int n_rows, int64_t cols, float* packed) {
  for (int g = 0; g < kFPanelRows; g += 8) {  // rows g..g+7
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8) {
      __m256 t[8];
      for (int i = 0; i < 8; ++i) {
        t[i] = g + i < n_rows ? L::load8(w + (g + i) * w_row_bytes + c * L::kBytes) : _mm256_setzero_ps();
      }
      transpose8(t);  // t[k] lane i = row g + i, column c + k
      for (int k = 0; k < 8; ++k) _mm256_store_ps(packed + (c + k) * kFPanelRows + g, t[k]);
    }
    for (; c < cols; ++c) {
      for (int i = 0; i < 8; ++i) {
        packed[c * kFPanelRows + g + i] = g + i < n_rows ? L::one(w + (g + i) * w_row_bytes + c * L::kBytes) : 0.0f;
      }
    }
  }
}

// y[t * y_stride + r] for the panel's rows r < nr and tokens x + t * pc, t < nt <= kFTok.
inline void outer_tile(const float* packed, int64_t cols, const float* x, int64_t pc, int nr, int nt, float* y,
                       int64_t y_stride) {
  __m256 acc[kFTok][3];
  for (int t = 0; t < kFTok; ++t) {
    for (int h = 0; h < 3; ++h) acc[t][h] = _mm256_setzero_ps();
  }
  for (int64_t c = 0; c < cols; ++c) {
    const float* wc = packed + c * kFPanelRows;
    const __m256 w0 = _mm256_load_ps(wc), w1 = _mm256_load_ps(wc + 8), w2 = _mm256_load_ps(wc + 16);
    for (int t = 0; t < kFTok; ++t) {
      const __m256 b = _mm256_broadcast_ss(x + t * pc + c);
      acc[t][0] = _mm256_fmadd_ps(b, w0, acc[t][0]);
      acc[t][1] = _mm256_fmadd_ps(b, w1, acc[t][1]);
      acc[t][2] = _mm256_fmadd_ps(b, w2, acc[t][2]);
    }
  }
  // The sums leave the registers once, here, with constant indices: read by the runtime
  // t < nt loop below, acc itself would live on the stack, stored every column. A full
  // tile stores them to y directly (a copy through sums was a memmove call per token).
  if (nr == kFPanelRows && nt == kFTok) {
    for (int t = 0; t < kFTok; ++t) {
      for (int h = 0; h < 3; ++h) _mm256_storeu_ps(y + t * y_stride + 8 * h, acc[t][h]);
    }
    return;
  }
  alignas(32) float sums[kFTok][kFPanelRows];
  for (int t = 0; t < kFTok; ++t) {
    for (int h = 0; h < 3; ++h) _mm256_store_ps(sums[t] + 8 * h, acc[t][h]);
  }
  for (int t = 0; t < nt; ++t) std::copy(sums[t], sums[t] + nr, y + t * y_stride);
}

// Rows go 48 at a time (widened once: 16 dot triples or 2 outer panels), tokens
// kFTokBlockBytes of activations at a time, so both stay in L2 while every triple or
// panel runs over the token block (a 512-token batch of f32 rows would not: 1.5 MiB
// at 768 columns). 48 rows: 192 B per column (the plan's panel allows 256).
constexpr int kFRowBlock = 48;
constexpr int64_t kFTokBlockBytes = int64_t{256} << 10;

// kFRowBlock rows widened at a time: packed triples (short batches) or outer-product panels,
// whichever is larger
int64_t float_panel_bytes(int64_t cols) {
  const int64_t triples = kFRowBlock / kFRows * kFRows * padded_cols(cols);
  const int64_t panels = kFRowBlock / kFPanelRows * kFPanelRows * cols;
  return std::max(triples, panels) * static_cast<int64_t>(sizeof(float));
}

template <typename L>
void float_rows(const std::byte* w, int64_t w_row_bytes, int64_t n_rows, const std::byte* acts, int64_t n_tokens,
                int64_t cols, float* y, int64_t y_stride) {
  const bool outer = n_tokens >= kFOuterMinTokens;
  const int64_t pc = padded_cols(cols), unit_rows = outer ? kFPanelRows : kFRows;
  const int64_t unit = outer ? kFPanelRows * cols : kFRows * pc;  // floats a packed triple / panel
  const int64_t tok_block = std::max<int64_t>(kFTok, kFTokBlockBytes / (pc * static_cast<int64_t>(sizeof(float))) / kFTok * kFTok);
  auto* packed = reinterpret_cast<float*>(panel_scratch(static_cast<size_t>(float_panel_bytes(cols))));
  const float* x = reinterpret_cast<const float*>(acts);
  for (int64_t rb0 = 0; rb0 < n_rows; rb0 += kFRowBlock) {
    const int n_units = static_cast<int>((std::min<int64_t>(kFRowBlock, n_rows - rb0) + unit_rows - 1) / unit_rows);
    for (int j = 0; j < n_units; ++j) {
      const int64_t r0 = rb0 + j * unit_rows;
      const int nr = static_cast<int>(std::min<int64_t>(unit_rows, n_rows - r0));
      if (outer) {
        widen_panel<L>(w + r0 * w_row_bytes, w_row_bytes, nr, cols, packed + j * unit);
      } else {
        widen_rows<L>(w + r0 * w_row_bytes, w_row_bytes, nr, cols, packed + j * unit);
      }
    }
    NextRowsPrefetch next(w + std::min(n_rows, rb0 + kFRowBlock) * w_row_bytes,
                          w + std::min(n_rows, rb0 + 2 * kFRowBlock) * w_row_bytes,
                          n_units * ((n_tokens + kFTok - 1) / kFTok));
    for (int64_t tb0 = 0; tb0 < n_tokens; tb0 += tok_block) {
      const int64_t tb1 = std::min(n_tokens, tb0 + tok_block);
      for (int j = 0; j < n_units; ++j) {
        const int64_t r0 = rb0 + j * unit_rows;
        const int nr = static_cast<int>(std::min<int64_t>(unit_rows, n_rows - r0));
        for (int64_t t0 = tb0; t0 < tb1; t0 += kFTok) {  // tokens past n_tokens: zero padding rows
          const int nt = static_cast<int>(std::min<int64_t>(kFTok, n_tokens - t0));
          next.step();
          if (outer) {
            outer_tile(packed + j * unit, cols, x + t0 * pc, pc, nr, nt, y + t0 * y_stride + r0, y_stride);
            continue;
          }
          float out[kFRows][kFTok];
          float_tile(packed + j * unit, pc, x + t0 * pc, out);
          for (int t = 0; t < nt; ++t) {
            for (int r = 0; r < nr; ++r) y[(t0 + t) * y_stride + r0 + r] = out[r][t];
          }
        }
      }
    }
  }
}

PanelKernels make_panels() {
  static_assert(kPanelTokens % kTok == 0);
  PanelKernels k;
#if PLIMSOLL_PANELS_VNNI
  PanelKernel q8{act_bytes<ActGroup>, prepare<true>, rows<BlockQ8_0>, packed_panel_bytes<PackedGroup>};
#else
  PanelKernel q8{act_bytes<ActGroup16>, prepare16, rows16<BlockQ8_0>, packed_panel_bytes<PackedGroup16>};
  // the plain build's further 32-element types (the VNNI builds' tables: see add_avx2_kquant_panels)
  k.k[static_cast<int>(DType::kIQ4_NL)] = {act_bytes<ActGroup16>, prepare16, rows16<BlockIQ4NL>,
                                           packed_panel_bytes<PackedGroup16>};
  k.k[static_cast<int>(DType::kQ4_1)] = {act_bytes<ActGroup>, prepare<false>, rows<BlockQ4_1>,
                                         packed_panel_bytes<PackedGroup>};
  k.k[static_cast<int>(DType::kQ5_0)] = {act_bytes<ActGroup>, prepare<false>, rows<BlockQ5_0>,
                                         packed_panel_bytes<PackedGroup>};
  k.k[static_cast<int>(DType::kQ5_1)] = {act_bytes<ActGroup>, prepare<false>, rows<BlockQ5_1>,
                                         packed_panel_bytes<PackedGroup>};
#endif
  PanelKernel q4{act_bytes<ActGroup>, prepare<false>, rows<BlockQ4_0>, packed_panel_bytes<PackedGroup>};
  k.k[static_cast<int>(DType::kQ8_0)] = q8;
  k.k[static_cast<int>(DType::kQ4_0)] = q4;
  static_assert(kPanelTokens % kFTok == 0);
  k.k[static_cast<int>(DType::kF32)] = {float_act_bytes, float_prepare, float_rows<WidenF32>, float_panel_bytes};
  k.k[static_cast<int>(DType::kF16)] = {float_act_bytes, float_prepare, float_rows<WidenF16>, float_panel_bytes};
  k.k[static_cast<int>(DType::kBF16)] = {float_act_bytes, float_prepare, float_rows<WidenBF16>, float_panel_bytes};
  add_avx2_kquant_panels(&k);
  return k;
}

}  // namespace

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
// Q8_0 / Q4_0 and the K-quants (the AVX-512 table's rows say from which batches; below them,
// and for the float dtypes, its tiles and broadcast panels).
const PanelKernels& avx512_ymm_panel_kernels() {
  static const PanelKernels kernels = [] {
    const PanelKernels own = make_panels();
    PanelKernels k;
    k.k[static_cast<int>(DType::kQ8_0)] = own.k[static_cast<int>(DType::kQ8_0)];
    k.k[static_cast<int>(DType::kQ4_0)] = own.k[static_cast<int>(DType::kQ4_0)];
    add_avx512_ymm_kquant_panels(&k);
    return k;
  }();
  return kernels;
}
#elif defined(__AVXVNNI__)
// AVX2's table (its float panels) with the VNNI Q8_0 / Q4_0 and K-quant entries.
const PanelKernels& avx2_vnni_panel_kernels() {
  static const PanelKernels kernels = [] {
    PanelKernels k = avx2_panel_kernels();
    const PanelKernels own = make_panels();
    for (DType d : {DType::kQ8_0, DType::kQ4_0}) k.k[static_cast<int>(d)] = own.k[static_cast<int>(d)];
    add_avx2_vnni_kquant_panels(&k);
    return k;
  }();
  return kernels;
}
#else
void avx2_quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    float d = 0.f;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), quantize_block(x + b * kQK, &d));
    y[b].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);  // d is already an f16 value
  }
}

const PanelKernels& avx2_panel_kernels() {
  static const PanelKernels kernels = make_panels();
  return kernels;
}

#endif
#undef PLIMSOLL_PANELS_VNNI

}  // namespace plimsoll::kernels
