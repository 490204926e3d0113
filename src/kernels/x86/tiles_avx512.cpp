// AVX-512 tile kernels: kRowTile weight rows x kTokenTile tokens in zmm registers
// (F32/F16/BF16 by FMA; Q8_0/Q4_0 by vpdpbusd over activations prepared per call;
// Q4_K/Q6_K in tiles_kquants_avx512.cpp).
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors (__Y = __Y),
// which -Wuninitialized flags at every extract/shuffle (GCC PR105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/blocks.h"
#include "kernels/layout_bytes.h"
#include "kernels/matmul_impl.h"
#include "kernels/x86/avx512_quant.h"
#include "kernels/x86/avx512_tiles.h"

namespace plimsoll::kernels {
namespace {

#define PLIMSOLL_UNROLL _Pragma("GCC unroll 4")

// ---- float weights: 16 columns per zmm, one accumulator per (row, token) ----
struct F32Load {
  using W = float;
  static __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 load_n(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
};
struct F16Load {
  using W = uint16_t;
  static __m512 load16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 load_n(const uint16_t* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
};
struct BF16Load {  // exact widening (<< 16), as the scalar twin
  using W = uint16_t;
  static __m512 widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static __m512 load16(const uint16_t* p) { return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static __m512 load_n(const uint16_t* p, __mmask16 m) { return widen(_mm256_maskz_loadu_epi16(m, p)); }
};

// acc[r][t] += w_r[c0..c0+16) * x_t[c0..c0+16); kTail: only the lanes in m.
template <typename L, int R, int T, bool kTail>
inline void float_step(const typename L::W* const* w, int64_t w_row_bytes, const float* const* x, int64_t c0,
                       __mmask16 m, __m512 (&acc)[R][T]) {
  __m512 wv[R];
  PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) {
    prefetch_ahead(w[r] + c0, R * w_row_bytes);
    wv[r] = kTail ? L::load_n(w[r] + c0, m) : L::load16(w[r] + c0);
  }
  PLIMSOLL_UNROLL for (int t = 0; t < T; ++t) {
    const __m512 xv = kTail ? _mm512_maskz_loadu_ps(m, x[t] + c0) : _mm512_loadu_ps(x[t] + c0);
    PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
  }
}

// w: R rows [cols] of L::W, w_row_bytes apart; x: T rows [cols] f32; y[t * y_stride + r].
template <typename L, int R, int T>
void float_tile(const std::byte* w_bytes, int64_t w_row_bytes, const std::byte* acts, int64_t act_stride_bytes,
                int64_t cols, float* y, int64_t y_stride) {
  const typename L::W* w[R];
  const float* x[T];
  __m512 acc[R][T];
  PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) w[r] = reinterpret_cast<const typename L::W*>(w_bytes + r * w_row_bytes);
  PLIMSOLL_UNROLL for (int t = 0; t < T; ++t) {
    x[t] = reinterpret_cast<const float*>(acts + t * act_stride_bytes);
    PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) acc[r][t] = _mm512_setzero_ps();
  }
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) float_step<L, R, T, false>(w, w_row_bytes, x, c, 0, acc);
  if (c < cols) float_step<L, R, T, true>(w, w_row_bytes, x, c, static_cast<__mmask16>((1u << (cols - c)) - 1), acc);
  PLIMSOLL_UNROLL for (int t = 0; t < T; ++t) {
    PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) y[t * y_stride + r] = hsum(acc[r][t]);
  }
}

// ---- Q8_0 / Q4_0 weights x prepared Q8_0 activations --------------------------
// vpdpbusd multiplies u8 by s8, so the weights enter as unsigned bytes w + K
// (Q8_0: w ^ 0x80 = w + 128; Q4_0: the stored nibble = w + 8) and each int32
// lane starts from -K * (sum of its 4 activation bytes), which the prepared row
// carries: the lane then holds exactly sum w * x, the scalar twin's integer sum.
// Prepared activations, per pair of 32-element blocks (the last pair of an odd
// count is padded with a zero block):
struct ActPair {
  int8_t qs[64];     // the pair's quantized values, in the weight layout's lane order
  int32_t corr[16];  // -K * sum of the 4 qs bytes of each int32 lane
  float d[16];       // each lane's block scale: the Q8_0 f16 scale, as f32
};
static_assert(sizeof(ActPair) == kAvx512TileActPairBytes);

// Q8_0: lanes 0..7 hold block 2p (elements in order), lanes 8..15 block 2p+1.
struct Q8Layout {
  using Block = BlockQ8_0;
  static constexpr int kOffset = 128;
  static constexpr __mmask16 kSecondLanes = 0xFF00;
  // qa/qb: elements 0..15 / 16..31 of blocks A (2p) and B (2p+1)
  static __m512i arrange(__m128i a_lo, __m128i a_hi, __m128i b_lo, __m128i b_hi) {
    const __m256i a = _mm256_inserti128_si256(_mm256_castsi128_si256(a_lo), a_hi, 1);
    const __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(b_lo), b_hi, 1);
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
  }
  static __m512i load_pair(const Block* blk, bool two) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[0].qs));
    const __m512i q = two ? _mm512_inserti64x4(_mm512_castsi256_si512(a),
                                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[1].qs)), 1)
                          : _mm512_zextsi256_si512(a);
    return _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80)));
  }
};

// Q4_0: 128-bit lanes hold A's elements 0..15, B's 0..15, A's 16..31, B's 16..31
// (low nibbles of A and B, then high nibbles).
struct Q4Layout {
  using Block = BlockQ4_0;
  static constexpr int kOffset = 8;
  static constexpr __mmask16 kSecondLanes = 0xF0F0;
  static __m512i arrange(__m128i a_lo, __m128i a_hi, __m128i b_lo, __m128i b_hi) {
    const __m256i lo = _mm256_inserti128_si256(_mm256_castsi128_si256(a_lo), b_lo, 1);
    const __m256i hi = _mm256_inserti128_si256(_mm256_castsi128_si256(a_hi), b_hi, 1);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  static __m512i load_pair(const Block* blk, bool two) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[0].qs));
    const __m256i q = two ? _mm256_inserti128_si256(_mm256_castsi128_si256(a),
                                                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[1].qs)), 1)
                          : _mm256_zextsi128_si256(a);
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
    return _mm512_and_si512(both, _mm512_set1_epi8(0x0F));
  }
};

template <typename Lay>
int64_t q_act_row_bytes(int64_t cols) {
  return (cols / kQK + 1) / 2 * static_cast<int64_t>(sizeof(ActPair));
}

template <typename Lay>
void q_prepare(const float* x, int64_t cols, int64_t t0, int64_t t1, std::byte* dst) {
  const int64_t nb = cols / kQK, row_bytes = q_act_row_bytes<Lay>(cols);
  const __m512i k_bytes = _mm512_set1_epi8(static_cast<char>(Lay::kOffset));
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * cols;
    auto* out = reinterpret_cast<ActPair*>(dst + t * row_bytes);
    for (int64_t b = 0; b < nb; b += 2) {
      __m128i a_lo, a_hi, b_lo = _mm_setzero_si128(), b_hi = _mm_setzero_si128();
      const float da = quantize_block(xt + b * kQK, &a_lo, &a_hi);
      const float db = b + 1 < nb ? quantize_block(xt + (b + 1) * kQK, &b_lo, &b_hi) : 0.f;
      const __m512i q = Lay::arrange(a_lo, a_hi, b_lo, b_hi);
      const __m512i ksum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), k_bytes, q);  // K * lane sums
      ActPair& p = out[b / 2];
      _mm512_store_si512(p.qs, q);
      _mm512_store_si512(p.corr, _mm512_sub_epi32(_mm512_setzero_si512(), ksum));
      _mm512_store_ps(p.d, _mm512_mask_blend_ps(Lay::kSecondLanes, _mm512_set1_ps(da), _mm512_set1_ps(db)));
    }
  }
}

// Lane -> block within its pair (0 or 1), as the layout places them.
template <typename Lay>
inline __m512i lane_blocks() {
  return _mm512_maskz_set1_epi32(Lay::kSecondLanes, 1);
}

// The f16 scales of up to 16 consecutive blocks (n of them; the rest 0) as f32.
template <typename Block>
inline __m512 block_scales16(const Block* blk, int n) {
  const __m512i offs = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(static_cast<int>(sizeof(Block))));
  const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
  // 4-byte reads at each block start: the f16 d plus the block's first qs bytes
  const __m512i raw = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, offs, blk, 1);
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(raw));
}

// One pair p of blocks for R rows x T tokens.
template <typename Lay, int R, int T>
inline void q_pair_step(const typename Lay::Block* const* w, int64_t w_row_bytes, const ActPair* const* x,
                        int64_t p, bool two, __m512i lane_idx, const float (*dw16)[16], __m512 (&acc)[R][T]) {
  __m512i wq[R];
  __m512 dwl[R];
  PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) {
    prefetch_ahead(w[r] + 2 * p, R * w_row_bytes);
    wq[r] = Lay::load_pair(w[r] + 2 * p, two);
    dwl[r] = _mm512_permutexvar_ps(lane_idx, _mm512_load_ps(dw16[r]));
  }
  PLIMSOLL_UNROLL for (int t = 0; t < T; ++t) {
    const ActPair& a = x[t][p];
    const __m512i xq = _mm512_load_si512(a.qs);
    PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) {
      const __m512i isum = _mm512_dpbusd_epi32(_mm512_load_si512(a.corr), wq[r], xq);
      const __m512 scale = _mm512_mul_ps(dwl[r], _mm512_load_ps(a.d));
      acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), scale, acc[r][t]);
    }
  }
}

template <typename Lay, int R, int T>
void q_tile(const std::byte* w_bytes, int64_t w_row_bytes, const std::byte* acts, int64_t act_stride_bytes,
            int64_t cols, float* y, int64_t y_stride) {
  using Block = typename Lay::Block;
  const int64_t nb = cols / kQK, n_pairs = (nb + 1) / 2;
  const Block* w[R];
  const ActPair* x[T];
  __m512 acc[R][T];
  PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) w[r] = reinterpret_cast<const Block*>(w_bytes + r * w_row_bytes);
  PLIMSOLL_UNROLL for (int t = 0; t < T; ++t) {
    x[t] = reinterpret_cast<const ActPair*>(acts + t * act_stride_bytes);
    PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) acc[r][t] = _mm512_setzero_ps();
  }
  const __m512i first_idx = lane_blocks<Lay>();
  alignas(64) float dw16[R][16];
  for (int64_t p0 = 0; p0 < n_pairs; p0 += 8) {  // chunks of 16 blocks share one scale gather per row
    const int n_blocks = static_cast<int>(std::min<int64_t>(16, nb - 2 * p0));
    PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) _mm512_store_ps(dw16[r], block_scales16(w[r] + 2 * p0, n_blocks));
    const int64_t p_end = std::min(n_pairs, p0 + 8);
    __m512i lane_idx = first_idx;
    for (int64_t p = p0; p < p_end; ++p) {
      q_pair_step<Lay, R, T>(w, w_row_bytes, x, p, 2 * p + 1 < nb, lane_idx, dw16, acc);
      lane_idx = _mm512_add_epi32(lane_idx, _mm512_set1_epi32(2));
    }
  }
  PLIMSOLL_UNROLL for (int t = 0; t < T; ++t) {
    PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) y[t * y_stride + r] = hsum(acc[r][t]);
  }
}

template <int R, int T> struct TF32 { static constexpr TileBody run = float_tile<F32Load, R, T>; };
template <int R, int T> struct TF16 { static constexpr TileBody run = float_tile<F16Load, R, T>; };
template <int R, int T> struct TBF16 { static constexpr TileBody run = float_tile<BF16Load, R, T>; };
template <int R, int T> struct TQ8_0 { static constexpr TileBody run = q_tile<Q8Layout, R, T>; };
template <int R, int T> struct TQ4_0 { static constexpr TileBody run = q_tile<Q4Layout, R, T>; };

TileKernels make_tiles() {
  TileKernels k;
  k.k[static_cast<int>(DType::kF32)].tile = by_shape<TF32>;
  k.k[static_cast<int>(DType::kF16)].tile = by_shape<TF16>;
  k.k[static_cast<int>(DType::kBF16)].tile = by_shape<TBF16>;
  k.k[static_cast<int>(DType::kQ8_0)] = {q_act_row_bytes<Q8Layout>, q_prepare<Q8Layout>, by_shape<TQ8_0>};
  k.k[static_cast<int>(DType::kQ4_0)] = {q_act_row_bytes<Q4Layout>, q_prepare<Q4Layout>, by_shape<TQ4_0>};
  add_avx512_kquant_tiles(&k);
  return k;
}

}  // namespace

const TileKernels& avx512_tile_kernels() {
  static const TileKernels kernels = make_tiles();
  return kernels;
}

const TileKernels& amx_tile_kernels() { return avx512_tile_kernels(); }

}  // namespace plimsoll::kernels
