// AVX-512 tile kernels for Q4_K / Q6_K weights: kRowTile rows x kTokenTile
// tokens over Q8_K activations prepared once per call (the scalar twin's
// quantize_q8_k, values reordered to the weight layout's lanes). Per 256-column
// super-block each (row, token) gets the scalar twin's exact integer sums by
// vpmaddubsw (u8 weight x s8 activation pairs) + vpdpwssd (x the 16-bit
// sub-block scales), then one f32 FMA by d_w * d_x (and, Q4_K, one for the mins).
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors (GCC PR105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/blocks.h"
#include "kernels/matmul_impl.h"
#include "kernels/x86/avx512_quant.h"
#include "kernels/x86/avx512_tiles.h"

namespace plimsoll::kernels {
namespace {

#define PLIMSOLL_UNROLL _Pragma("GCC unroll 4")

// One prepared super-block of a token (5 cache lines).
struct KAct {
  int8_t qs[kQKK];       // Q8_K values, in the weight layout's chunk order (below)
  int16_t bsums[16];     // sums of the values per 16 elements, element order (Q8_K's bsums)
  float d;               // Q8_K scale
  float pad[7];
};
static_assert(sizeof(KAct) == 320);

// The weight layouts: a super-block of one row unpacks into 4 chunks of 64
// unsigned bytes (the byte order of the prepared activations), 4 int16 scale
// vectors (chunk c's 32 16-bit lanes: the scale of each pair of its bytes) and
// a correction vector of 16 int16 against bsums, weighted by `corr_scale`.
struct Unpacked {
  __m512i q[4], s[4];
  __m256i corr;       // per 16 elements; dotted with the token's bsums
  float d, corr_d;    // isum scale; the correction's scale (Q6_K: 0, folded into isum)
};

// Q4_K: chunk 0 = sub-blocks 0 and 2 (low nibbles of qs[0..63]), 1 = 1 and 3
// (high nibbles), 2 = 4 and 6, 3 = 5 and 7; corr: the mins, one per 16 elements.
struct Q4KLayout {
  using Block = BlockQ4K;
  static constexpr bool kMins = true;
  // element e of the super-block -> byte position in the chunks
  static int position(int e) {
    const int s = e / 32, h = s / 4;
    return 128 * h + (s % 2) * 64 + (s % 4 / 2) * 32 + e % 32;
  }
  static void unpack(const Block& b, Unpacked* u) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int h = 0; h < 2; ++h) {
      const __m512i q = _mm512_loadu_si512(b.qs + 64 * h);
      u->q[2 * h] = _mm512_and_si512(q, m4);
      u->q[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
    }
    // ggml's 6-bit unpacking: 8 scales then 8 mins, one byte each
    uint32_t a[3], sm[4];
    std::memcpy(a, b.scales, 12);
    constexpr uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
    sm[0] = a[0] & k1;
    sm[1] = (a[2] & k2) | (((a[0] >> 6) & k3) << 4);
    sm[2] = a[1] & k1;
    sm[3] = ((a[2] >> 4) & k2) | (((a[1] >> 6) & k3) << 4);
    const __m512i v = _mm512_zextsi256_si512(
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sm))));  // int16: sc 0..7, m 8..15
    for (int c = 0; c < 4; ++c) {  // chunk c: sub-blocks 4(c/2) + c%2 (lanes 0..15) and that + 2
      const short lo = static_cast<short>(4 * (c / 2) + c % 2);
      u->s[c] = _mm512_permutexvar_epi16(
          _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(lo), _mm512_set1_epi16(static_cast<short>(lo + 2))), v);
    }
    u->corr = _mm512_castsi512_si256(_mm512_permutexvar_epi16(
        _mm512_setr_epi32(0x00080008, 0x00090009, 0x000A000A, 0x000B000B, 0x000C000C, 0x000D000D, 0x000E000E,
                          0x000F000F, 0, 0, 0, 0, 0, 0, 0, 0),
        v));  // mins[g / 2]
    u->d = _cvtsh_ss(b.d);
    u->corr_d = -_cvtsh_ss(b.dmin);
  }
};

// Q6_K: chunks are elements 0..63, 64..127, ... in order (6-bit values 0..63);
// corr: -32 * scale per 16 elements (the values' -32 offset), added to isum.
struct Q6KLayout {
  using Block = BlockQ6K;
  static constexpr bool kMins = false;
  static int position(int e) { return e; }
  static void unpack(const Block& b, Unpacked* u) {
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
    const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
    const __m512i v = _mm512_zextsi256_si512(sc);
    for (int c = 0; c < 4; ++c) {  // chunk c: groups 4c .. 4c+3, 8 lanes each
      const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0x00020002,
                                            0x00020002, 0x00020002, 0x00020002, 0x00030003, 0x00030003, 0x00030003,
                                            0x00030003);
      u->s[c] = _mm512_permutexvar_epi16(_mm512_add_epi16(idx, _mm512_set1_epi16(static_cast<short>(4 * c))), v);
    }
    u->corr = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc, 5));
    u->d = _cvtsh_ss(b.d);
    u->corr_d = 0.f;
  }
};

int64_t k_act_row_bytes(int64_t cols) { return cols / kQKK * static_cast<int64_t>(sizeof(KAct)); }

template <typename Lay>
void k_prepare(const float* x, int64_t cols, int64_t t0, int64_t t1, std::byte* dst) {
  const int64_t nb = cols / kQKK, row_bytes = k_act_row_bytes(cols);
  for (int64_t t = t0; t < t1; ++t) {
    auto* out = reinterpret_cast<KAct*>(dst + t * row_bytes);
    for (int64_t b = 0; b < nb; ++b) {
      alignas(64) int8_t q[kQKK];
      out[b].d = quantize_q8k_block(x + t * cols + b * kQKK, q, out[b].bsums);
      for (int s = 0; s < kQKK / 32; ++s) std::memcpy(out[b].qs + Lay::position(32 * s), q + 32 * s, 32);
      std::memset(out[b].pad, 0, sizeof(out[b].pad));
    }
  }
}

// One super-block b for R rows x T tokens: acc[r][t] += isum * d_w * d_x + msum * (-dmin_w) * d_x.
template <typename Lay, int R, int T>
inline void k_block_step(const std::byte* const* w, int64_t w_row_bytes, const KAct* const* x, int64_t b,
                         __m512 (&acc)[R][T]) {
  using Block = typename Lay::Block;
  PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) {
    const Block& blk = reinterpret_cast<const Block*>(w[r])[b];
    for (int l = 0; l < static_cast<int>(sizeof(Block)); l += 64) prefetch_ahead(reinterpret_cast<const char*>(&blk) + l, R * w_row_bytes);
    Unpacked u;
    Lay::unpack(blk, &u);
    PLIMSOLL_UNROLL for (int t = 0; t < T; ++t) {
      const KAct& a = x[t][b];
      const __m256i bs = _mm256_load_si256(reinterpret_cast<const __m256i*>(a.bsums));
      __m512i isum;
      __m512 corr_f = _mm512_setzero_ps();
      if (Lay::kMins) {
        isum = _mm512_setzero_si512();
        corr_f = _mm512_cvtepi32_ps(_mm512_zextsi256_si512(_mm256_madd_epi16(u.corr, bs)));
      } else {
        isum = _mm512_zextsi256_si512(_mm256_madd_epi16(u.corr, bs));
      }
      PLIMSOLL_UNROLL for (int c = 0; c < 4; ++c) {
        const __m512i p = _mm512_maddubs_epi16(u.q[c], _mm512_load_si512(a.qs + 64 * c));
        isum = _mm512_dpwssd_epi32(isum, p, u.s[c]);
      }
      acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(u.d * a.d), acc[r][t]);
      if (Lay::kMins) acc[r][t] = _mm512_fmadd_ps(corr_f, _mm512_set1_ps(u.corr_d * a.d), acc[r][t]);
    }
  }
}

// w: R rows of cols / 256 blocks; acts: T prepared rows; y[t * y_stride + r].
template <typename Lay, int R, int T>
void k_tile(const std::byte* w_bytes, int64_t w_row_bytes, const std::byte* acts, int64_t act_stride_bytes,
            int64_t cols, float* y, int64_t y_stride) {
  const std::byte* w[R];
  const KAct* x[T];
  __m512 acc[R][T];
  PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) w[r] = w_bytes + r * w_row_bytes;
  PLIMSOLL_UNROLL for (int t = 0; t < T; ++t) {
    x[t] = reinterpret_cast<const KAct*>(acts + t * act_stride_bytes);
    PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < cols / kQKK; ++b) k_block_step<Lay, R, T>(w, w_row_bytes, x, b, acc);
  PLIMSOLL_UNROLL for (int t = 0; t < T; ++t) {
    PLIMSOLL_UNROLL for (int r = 0; r < R; ++r) y[t * y_stride + r] = hsum(acc[r][t]);
  }
}

template <int R, int T> struct TQ4K { static constexpr TileBody run = k_tile<Q4KLayout, R, T>; };
template <int R, int T> struct TQ6K { static constexpr TileBody run = k_tile<Q6KLayout, R, T>; };

}  // namespace

void add_avx512_kquant_tiles(TileKernels* k) {
  k->k[static_cast<int>(DType::kQ4_K)] = {k_act_row_bytes, k_prepare<Q4KLayout>, by_shape<TQ4K>};
  k->k[static_cast<int>(DType::kQ6_K)] = {k_act_row_bytes, k_prepare<Q6KLayout>, by_shape<TQ6K>};
}

}  // namespace plimsoll::kernels
