// AMX-INT8 for Q4_K / Q6_K weights over batches of tokens (prefill, batched
// decode). The activations are the scalar twin's Q8_K (quantize_q8_k), prepared
// per call as TDPBSSD B operands. The weights of a 16-row panel are unpacked once
// per call with each sub-block scale folded in, split into int8 "pieces":
//   Q4_K: sc = 8 * hi + lo (hi, lo in 0..7), value * hi and value * lo <= 105;
//   Q6_K: sc = 64 * a + 8 * b + c (digits in -3..4), (value - 32) * digit in -128..124.
// So each piece is a plain int8 matrix and a super-block's 256 columns are 4
// TDPBSSD (K = 64) per piece, accumulated in one int32 tile; isum = sum of the
// pieces' tiles << their shifts is exactly the scalar twin's integer sum. Q4_K's
// mins term (sum_j m_j * S_j, S_j the token's sum over sub-block j) is 4 vpdpwssd
// per row. Then, per super-block, y += (d_w * d_x) * isum - (dmin_w * d_x) * msum in f32.
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors (GCC PR105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/blocks.h"
#include "kernels/layout_bytes.h"
#include "kernels/matmul_impl.h"
#include "kernels/x86/amx_common.h"
#include "kernels/x86/avx512_quant.h"
#include "kernels/x86/kquant_unpack.h"

namespace plimsoll::kernels {
namespace {

constexpr int kChunks = kQKK / 64;  // K = 64 per TDPBSSD
constexpr int kTileBytes = 1024;    // 16 rows x 64 bytes

// Prepared activations, per token tile (kAmxTokens tokens) and super-block.
// Tokens past n_tokens are zero (values, sums and scale).
struct KActTile {
  int8_t qs[kChunks][kTileBytes];  // chunk c (64 values in the layout's order, kquant_unpack.h):
                                   // value k of token t at (k / 4) * 64 + t * 4 + k % 4
  int32_t spair[kChunks][kAmxTokens];  // token t: S_2i (low 16 bits), S_2i+1 (high 16 bits)
  float d[kAmxTokens];                 // Q8_K scales
};
static_assert(sizeof(KActTile) == 4416);

int64_t token_tiles(int64_t n_tokens) { return (n_tokens + kAmxTokens - 1) / kAmxTokens; }

int64_t kamx_act_bytes(int64_t n_tokens, int64_t cols) {
  return token_tiles(n_tokens) * (cols / kQKK) * static_cast<int64_t>(sizeof(KActTile));
}

// Token t (< 16) of one super-block: its Q8_K values (element order) into
// stage[t] in the layout's order; its sub-block sums and scale into o.
template <typename Lay>
void stage_token(const int8_t* q, const int16_t* bsums, float d, int t, int8_t (*stage)[kQKK], KActTile* o) {
  for (int s = 0; s < kQKK / 32; ++s) std::memcpy(stage[t] + Lay::position(32 * s), q + 32 * s, 32);
  for (int i = 0; i < kChunks; ++i) {  // sub-blocks 2i and 2i+1: 32 values = two bsums each
    const int s0 = bsums[4 * i] + bsums[4 * i + 1], s1 = bsums[4 * i + 2] + bsums[4 * i + 3];
    o->spair[i][t] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(s0)) |
                                          (static_cast<uint32_t>(static_cast<uint16_t>(s1)) << 16));
  }
  o->d[t] = d;
}

// The 16 staged tokens into the VNNI layout: per chunk, a 16 x 16 transpose of
// 4-byte groups (row t: token t's 16 groups -> row g: group g of the 16 tokens).
inline void interleave_tokens(const int8_t (*stage)[kQKK], KActTile* o) {
  for (int c = 0; c < kChunks; ++c) {
    __m512 v[16];
    for (int t = 0; t < kAmxTokens; ++t) v[t] = _mm512_load_ps(reinterpret_cast<const float*>(stage[t] + 64 * c));
    transpose16(v);
    for (int g = 0; g < 16; ++g) _mm512_store_ps(reinterpret_cast<float*>(o->qs[c] + 64 * g), v[g]);
  }
}

template <typename Lay>
void kamx_prepare(const float* x, int64_t n_tokens, int64_t cols, int64_t tt0, int64_t tt1, std::byte* dst) {
  const int64_t nb = cols / kQKK;
  alignas(64) int8_t stage[kAmxTokens][kQKK];
  for (int64_t tt = tt0; tt < tt1; ++tt) {
    KActTile* out = reinterpret_cast<KActTile*>(dst) + tt * nb;
    for (int64_t b = 0; b < nb; ++b) {
      for (int t = 0; t < kAmxTokens; ++t) {
        const int64_t token = tt * kAmxTokens + t;
        alignas(64) int8_t q[kQKK] = {};
        int16_t bsums[16] = {};
        const float d = token < n_tokens ? quantize_q8k_block(x + token * cols + b * kQKK, q, bsums) : 0.f;
        stage_token<Lay>(q, bsums, d, t, stage, &out[b]);
      }
      interleave_tokens(stage, &out[b]);
    }
  }
}

// The pieces of each layout: int16 digits of the 16-byte group scales (g16).
struct Q4KAmx : Q4KUnpack {
  static constexpr int kPieces = 2;
  static constexpr int kShift[kPieces] = {3, 0};
  static constexpr bool kMins = true;
  static constexpr int kOffset = 0;  // stored value -> weight value
  static void digits(__m256i g, __m256i (&dig)[kPieces]) {
    dig[0] = _mm256_srli_epi16(g, 3);
    dig[1] = _mm256_and_si256(g, _mm256_set1_epi16(7));
  }
};
struct Q6KAmx : Q6KUnpack {
  static constexpr int kPieces = 3;
  static constexpr int kShift[kPieces] = {6, 3, 0};
  static constexpr bool kMins = false;
  static constexpr int kOffset = 32;
  // the low base-8 digit of v in -3..4, and (v - digit) / 8
  static __m256i low_digit(__m256i v, __m256i* rest) {
    const __m256i three = _mm256_set1_epi16(3);
    const __m256i dgt = _mm256_sub_epi16(_mm256_and_si256(_mm256_add_epi16(v, three), _mm256_set1_epi16(7)), three);
    *rest = _mm256_srai_epi16(_mm256_sub_epi16(v, dgt), 3);
    return dgt;
  }
  static void digits(__m256i g, __m256i (&dig)[kPieces]) {
    __m256i rest, top;
    dig[2] = low_digit(g, &rest);
    dig[1] = low_digit(rest, &top);
    dig[0] = top;  // -2..2
  }
};

// A 16-row panel, unpacked: piece p of chunk c of super-block b is the int8
// A operand at a + ((b * kChunks + c) * kPieces + p) * kTileBytes (rows 64 bytes
// apart; rows past the panel are zero); per super-block and row, the f32 d and
// dmin and (Q4_K) the pairs of mins, mp[(b * 4 + i) * 16 + r] = m_2i | m_2i+1 << 16.
struct KPanel {
  int8_t* a;
  float* d;
  float* dmin;
  int32_t* mp;
};

template <typename Lay>
constexpr int64_t kPanelBytesPerBlock = kChunks * Lay::kPieces * kTileBytes + 2 * 64 + kChunks * 64;
static_assert(kPanelBytesPerBlock<Q6KAmx> == kAmxKQuantPanelBytesPerBlock256);
static_assert(kPanelBytesPerBlock<Q4KAmx> <= kAmxKQuantPanelBytesPerBlock256);

template <typename Lay>
int64_t panel_bytes(int64_t nb) {
  return nb * kPanelBytesPerBlock<Lay>;
}

template <typename Lay>
int64_t kamx_panel_bytes(int64_t cols) {
  return panel_bytes<Lay>(cols / kQKK);
}

template <typename Lay>
KPanel panel_layout(std::byte* s, int64_t nb) {
  KPanel p;
  p.a = reinterpret_cast<int8_t*>(s);
  p.d = reinterpret_cast<float*>(s + nb * kChunks * Lay::kPieces * kTileBytes);
  p.dmin = p.d + nb * kAmxRows;
  p.mp = reinterpret_cast<int32_t*>(p.dmin + nb * kAmxRows);
  return p;
}

// Bytes v (int8) times int16 lanes dv (one per byte pair), products in int8 range.
inline __m512i mul_bytes(__m512i even, __m512i odd, __m512i dv) {
  const __m512i lo = _mm512_and_si512(_mm512_mullo_epi16(even, dv), _mm512_set1_epi16(0x00FF));
  return _mm512_or_si512(lo, _mm512_slli_epi16(_mm512_mullo_epi16(odd, dv), 8));
}

// Row r of the panel, super-block b.
template <typename Lay>
void unpack_row(const typename Lay::Block& blk, int r, int64_t b, const KPanel& p) {
  KUnpacked u;
  Lay::unpack(blk, &u);
  __m256i dig[Lay::kPieces];
  Lay::digits(u.g16, dig);
  for (int c = 0; c < kChunks; ++c) {
    const __m512i q = _mm512_sub_epi8(u.q[c], _mm512_set1_epi8(static_cast<char>(Lay::kOffset)));
    const __m512i even = _mm512_srai_epi16(_mm512_slli_epi16(q, 8), 8), odd = _mm512_srai_epi16(q, 8);
    for (int pc = 0; pc < Lay::kPieces; ++pc) {
      const __m512i dv = _mm512_permutexvar_epi16(chunk_group_index(c), _mm512_zextsi256_si512(dig[pc]));
      _mm512_store_si512(p.a + ((b * kChunks + c) * Lay::kPieces + pc) * kTileBytes + r * 64, mul_bytes(even, odd, dv));
    }
  }
  p.d[b * kAmxRows + r] = u.d;
  p.dmin[b * kAmxRows + r] = u.dmin;
  alignas(32) int16_t m[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(m), u.m16);  // the min of each 16 elements (element order)
  for (int i = 0; i < kChunks; ++i) {  // sub-block j's min is m[2j]
    const auto lo = static_cast<uint32_t>(static_cast<uint16_t>(m[4 * i]));
    const auto hi = static_cast<uint32_t>(static_cast<uint16_t>(m[4 * i + 2]));
    p.mp[(b * kChunks + i) * kAmxRows + r] = static_cast<int32_t>(lo | (hi << 16));
  }
}

template <typename Lay>
void build_panel(const std::byte* w, int64_t w_row_bytes, int n_rows, int64_t nb, const KPanel& p) {
  using Block = typename Lay::Block;
  for (int r = 0; r < kAmxRows; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      if (r < n_rows) {
        unpack_row<Lay>(reinterpret_cast<const Block*>(w + r * w_row_bytes)[b], r, b, p);
        continue;
      }
      for (int i = 0; i < kChunks * Lay::kPieces; ++i) {
        _mm512_store_si512(p.a + (b * kChunks * Lay::kPieces + i) * kTileBytes + r * 64, _mm512_setzero_si512());
      }
      p.d[b * kAmxRows + r] = p.dmin[b * kAmxRows + r] = 0.f;
      for (int i = 0; i < kChunks; ++i) p.mp[(b * kChunks + i) * kAmxRows + r] = 0;
    }
  }
}

// Tiles: 0 activations (16 K-groups x 64 bytes), 1..3 weight pieces (16 x 64
// bytes), 4..6 the pieces' int32 sums (16 rows x 16 tokens).
AmxTileConfig make_kconfig() {
  AmxTileConfig c;
  for (int i = 0; i < 7; ++i) { c.rows[i] = 16; c.colsb[i] = 64; }
  return c;
}

// The 4 chunks of super-block b into tiles 4.. (one per piece); left in the tiles.
template <typename Lay>
inline void block_dots(const KPanel& p, const KActTile& x, int64_t b) {
  _tile_zero(4);
  _tile_zero(5);
  if constexpr (Lay::kPieces == 3) _tile_zero(6);
  for (int ch = 0; ch < kChunks; ++ch) {
    const int8_t* a = p.a + (b * kChunks + ch) * Lay::kPieces * kTileBytes;
    _tile_loadd(0, x.qs[ch], 64);
    _tile_loadd(1, a, 64);
    _tile_dpbssd(4, 1, 0);
    _tile_loadd(2, a + kTileBytes, 64);
    _tile_dpbssd(5, 2, 0);
    if constexpr (Lay::kPieces == 3) {
      _tile_loadd(3, a + 2 * kTileBytes, 64);
      _tile_dpbssd(6, 3, 0);
    }
  }
}

// c: the pieces' sums, from tiles 4..
template <typename Lay>
inline void store_dots(int32_t (*c)[kAmxRows][kAmxTokens]) {
  _tile_stored(4, c[0], 64);
  _tile_stored(5, c[1], 64);
  if constexpr (Lay::kPieces == 3) _tile_stored(6, c[2], 64);
}

// acc[r] (16 tokens) += (d_w * d_x) * isum - (dmin_w * d_x) * msum for super-block b.
template <typename Lay>
inline void scale_block(const KPanel& p, const KActTile& x, int64_t b, const int32_t (*c)[kAmxRows][kAmxTokens],
                        __m512 (&acc)[kAmxRows]) {
  const __m512 dx = _mm512_load_ps(x.d);
#pragma GCC unroll 16
  for (int r = 0; r < kAmxRows; ++r) {
    __m512i isum = _mm512_setzero_si512();
    for (int pc = 0; pc < Lay::kPieces; ++pc) {
      isum = _mm512_add_epi32(isum, _mm512_slli_epi32(_mm512_load_si512(c[pc][r]), Lay::kShift[pc]));
    }
    const __m512 dd = _mm512_mul_ps(_mm512_set1_ps(p.d[b * kAmxRows + r]), dx);
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), dd, acc[r]);
    if constexpr (Lay::kMins) {
      __m512i msum = _mm512_setzero_si512();
      for (int i = 0; i < kChunks; ++i) {
        msum = _mm512_dpwssd_epi32(msum, _mm512_set1_epi32(p.mp[(b * kChunks + i) * kAmxRows + r]),
                                   _mm512_load_si512(x.spair[i]));
      }
      acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(_mm512_set1_ps(p.dmin[b * kAmxRows + r]), dx),
                                acc[r]);
    }
  }
}

// One panel x all token tiles: y[t * y_stride + r] for t < n_tokens, r < n_rows.
// Software-pipelined over the (token tile, super-block) steps: step i + 1's
// dots go to the tiles right after step i's sums leave them, so TMUL works on
// them while AVX-512 scales step i.
template <typename Lay>
void kpanel_rows(const KPanel& p, const KActTile* x, int64_t nb, int n_rows, int64_t n_tokens, float* y,
                 int64_t y_stride) {
  alignas(64) int32_t c[Lay::kPieces][kAmxRows][kAmxTokens];
  __m512 acc[kAmxRows];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  const int64_t steps = token_tiles(n_tokens) * nb;  // step i: token tile i / nb, super-block i % nb
  const __mmask16 m = static_cast<__mmask16>((1u << n_rows) - 1);
  block_dots<Lay>(p, x[0], 0);
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t b = i % nb;
    store_dots<Lay>(c);
    if (i + 1 < steps) block_dots<Lay>(p, x[i + 1], (i + 1) % nb);
    scale_block<Lay>(p, x[i], b, c, acc);
    if (b + 1 < nb) continue;
    const int64_t t0 = i / nb * kAmxTokens;  // the token tile is done
    transpose16(acc);  // acc[t]: the panel's rows for token t0 + t
    const int n_tok = static_cast<int>(std::min<int64_t>(kAmxTokens, n_tokens - t0));
    for (int t = 0; t < n_tok; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * y_stride, m, acc[t]);
    for (__m512& a : acc) a = _mm512_setzero_ps();
  }
}

template <typename Lay>
void kamx_rows(const std::byte* w, int64_t w_row_bytes, int64_t n_rows, const std::byte* acts, int64_t n_tokens,
               int64_t cols, float* y, int64_t y_stride) {
  static const AmxTileConfig config = make_kconfig();
  const int64_t nb = cols / kQKK;
  const KPanel p = panel_layout<Lay>(panel_scratch(static_cast<size_t>(kamx_panel_bytes<Lay>(cols))), nb);
  const KActTile* x = reinterpret_cast<const KActTile*>(acts);
  _tile_loadconfig(&config);  // per thread; released below so idle threads carry no tile state
  for (int64_t r0 = 0; r0 < n_rows; r0 += kAmxRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kAmxRows, n_rows - r0));
    build_panel<Lay>(w + r0 * w_row_bytes, w_row_bytes, nr, nb, p);
    kpanel_rows<Lay>(p, x, nb, nr, n_tokens, y + r0, y_stride);
  }
  _tile_release();
}

}  // namespace

void add_amx_kquant_kernels(PanelKernels* k) {
  k->k[static_cast<int>(DType::kQ4_K)] = {kamx_act_bytes, kamx_prepare<Q4KAmx>, kamx_rows<Q4KAmx>, kamx_panel_bytes<Q4KAmx>};
  k->k[static_cast<int>(DType::kQ6_K)] = {kamx_act_bytes, kamx_prepare<Q6KAmx>, kamx_rows<Q6KAmx>, kamx_panel_bytes<Q6KAmx>};
}

}  // namespace plimsoll::kernels
