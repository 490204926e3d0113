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
#include "kernels/x86/kquant_unpack.h"

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

// The layouts: the unpacking (kquant_unpack.h) plus the correction against the
// token's bsums (per 16 elements, element order) and its scale.
// Q4_K: the mins (msum), scaled by -dmin * d_x.
struct Q4KLayout : Q4KUnpack {
  static constexpr bool kMins = true;
  static __m256i corr(const KUnpacked& u) { return u.m16; }
};
// Q6_K: the values' -32 offset, -32 * scale per 16 elements, added to isum.
struct Q6KLayout : Q6KUnpack {
  static constexpr bool kMins = false;
  static __m256i corr(const KUnpacked& u) {
    return _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(u.g16, 5));
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
    const char* bytes = reinterpret_cast<const char*>(&blk);
    for (int l = 0; l < static_cast<int>(sizeof(Block)); l += 64) prefetch_ahead(bytes + l, R * w_row_bytes);
    KUnpacked u;
    Lay::unpack(blk, &u);
    const __m256i corr = Lay::corr(u);
    const __m512i g = _mm512_zextsi256_si512(u.g16);
    __m512i s[4];
    PLIMSOLL_UNROLL for (int c = 0; c < 4; ++c) s[c] = _mm512_permutexvar_epi16(chunk_group_index(c), g);
    PLIMSOLL_UNROLL for (int t = 0; t < T; ++t) {
      const KAct& a = x[t][b];
      const __m256i bs = _mm256_load_si256(reinterpret_cast<const __m256i*>(a.bsums));
      __m512i isum;
      __m512 corr_f = _mm512_setzero_ps();
      if (Lay::kMins) {
        isum = _mm512_setzero_si512();
        corr_f = _mm512_cvtepi32_ps(_mm512_zextsi256_si512(_mm256_madd_epi16(corr, bs)));
      } else {
        isum = _mm512_zextsi256_si512(_mm256_madd_epi16(corr, bs));
      }
      PLIMSOLL_UNROLL for (int c = 0; c < 4; ++c) {
        const __m512i p = _mm512_maddubs_epi16(u.q[c], _mm512_load_si512(a.qs + 64 * c));
        isum = _mm512_dpwssd_epi32(isum, p, s[c]);
      }
      acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(u.d * a.d), acc[r][t]);
      if (Lay::kMins) acc[r][t] = _mm512_fnmadd_ps(corr_f, _mm512_set1_ps(u.dmin * a.d), acc[r][t]);
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
