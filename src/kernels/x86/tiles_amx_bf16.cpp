// AMX-BF16 kernels for float weights (F32, F16, BF16) over batches of tokens
// (prefill, batched decode). Each value is split into two bf16 parts,
// v = hi + lo + rest with |rest| <= 2^-17 |v| (f16 and bf16 weights split
// exactly: rest = 0), and TDPBF16PS sums hi*hi + hi*lo + lo*hi in f32 tiles over
// all columns; the lo*lo term and the rests are below 2^-16 of each product, so
// a dot differs from the f32 scalar twin by about 2^-16 of sum |w * x| (llama.cpp
// rounds activations to f16 for F16 weights: 2^-11). BF16 weights have lo = 0:
// two products.
//
// Layout: the k-chunk (32 columns) of 16 weight rows or 16 tokens is one ChunkPair
// (hi tile, lo tile). Weights are TDPBF16PS's A operand (row n: 32 bf16 in column
// order, as converted, no shuffling), tokens its B operand (VNNI: row p holds,
// for each token t, the pair of columns 2p, 2p + 1; transposed once per call),
// so the f32 result tile is [16 rows, 16 tokens], transposed into y [tokens, rows].
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors (GCC PR105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/layout_bytes.h"
#include "kernels/matmul_impl.h"
#include "kernels/x86/amx_common.h"

namespace plimsoll::kernels {
namespace {

inline constexpr int kChunk = 32;  // columns per TDPBF16PS step

struct ChunkPair {
  uint16_t hi[16 * kChunk];
  uint16_t lo[16 * kChunk];
};
static_assert(sizeof(ChunkPair) == kAmxBf16ChunkBytes);

int64_t chunks(int64_t cols) { return (cols + kChunk - 1) / kChunk; }
int64_t token_tiles(int64_t n_tokens) { return (n_tokens + kAmxTokens - 1) / kAmxTokens; }

__m512 widen_bf16(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }

// 32 floats (a: columns 0-15, b: 16-31) -> hi, lo as 32 bf16 each, in column
// order. Non-finite inputs give non-finite outputs (NaN where the scalar twin
// may give inf).
inline void split32(__m512 a, __m512 b, __m512i* hi, __m512i* lo) {
  const __m512i h = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a));  // lanes 0-15: a, 16-31: b
  const __m512 ha = widen_bf16(_mm512_castsi512_si256(h)), hb = widen_bf16(_mm512_extracti64x4_epi64(h, 1));
  *hi = h;
  *lo = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_sub_ps(b, hb), _mm512_sub_ps(a, ha)));
}

// Columns [c0, c0 + 32) of one row as f32 (zeros past cols).
struct F32Row {
  static void load32(const std::byte* row, int64_t c0, int64_t cols, __m512* a, __m512* b) {
    const float* p = reinterpret_cast<const float*>(row) + c0;
    if (c0 + kChunk <= cols) {
      *a = _mm512_loadu_ps(p);
      *b = _mm512_loadu_ps(p + 16);
      return;
    }
    const int64_t n = cols - c0;
    *a = _mm512_maskz_loadu_ps(static_cast<__mmask16>(n >= 16 ? 0xFFFF : (1u << n) - 1), p);
    *b = _mm512_maskz_loadu_ps(static_cast<__mmask16>(n <= 16 ? 0 : (1u << (n - 16)) - 1), p + 16);
  }
};

template <bool kBrain>
struct Half16Row {  // F16 (kBrain false) or BF16 weights
  static __m512 widen(__m256i h) { return kBrain ? widen_bf16(h) : _mm512_cvtph_ps(h); }
  static void load32(const std::byte* row, int64_t c0, int64_t cols, __m512* a, __m512* b) {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(row) + c0;
    const int64_t n = std::min<int64_t>(kChunk, cols - c0);
    const __mmask32 m = n == kChunk ? ~__mmask32{0} : static_cast<__mmask32>((1ull << n) - 1);
    const __m512i v = _mm512_maskz_loadu_epi16(m, p);
    *a = widen(_mm512_castsi512_si256(v));
    *b = widen(_mm512_extracti64x4_epi64(v, 1));
  }
};

// ---- activations: x [n_tokens, cols] f32 -> dst[tt * chunks + kc], A layout ----
int64_t bf16_act_bytes(int64_t n_tokens, int64_t cols) {
  return token_tiles(n_tokens) * chunks(cols) * static_cast<int64_t>(sizeof(ChunkPair));
}

void bf16_prepare(const float* x, int64_t n_tokens, int64_t cols, int64_t tt0, int64_t tt1, std::byte* dst) {
  const int64_t nk = chunks(cols), row_bytes = cols * static_cast<int64_t>(sizeof(float));
  for (int64_t tt = tt0; tt < tt1; ++tt) {
    ChunkPair* out = reinterpret_cast<ChunkPair*>(dst) + tt * nk;
    for (int64_t kc = 0; kc < nk; ++kc) {
      __m512 hi[kAmxTokens], lo[kAmxTokens];  // hi[t]: token t's 16 column pairs (32-bit lanes)
      for (int t = 0; t < kAmxTokens; ++t) {
        const int64_t token = tt * kAmxTokens + t;
        __m512i h = _mm512_setzero_si512(), l = _mm512_setzero_si512();
        if (token < n_tokens) {
          __m512 a, b;
          F32Row::load32(reinterpret_cast<const std::byte*>(x) + token * row_bytes, kc * kChunk, cols, &a, &b);
          split32(a, b, &h, &l);
        }
        hi[t] = _mm512_castsi512_ps(h);
        lo[t] = _mm512_castsi512_ps(l);
      }
      transpose16(hi);  // hi[p] lane t: token t's pair p
      transpose16(lo);
      for (int p = 0; p < 16; ++p) {
        _mm512_store_ps(out[kc].hi + p * kChunk, hi[p]);
        _mm512_store_ps(out[kc].lo + p * kChunk, lo[p]);
      }
    }
  }
}

// ---- weights: one panel of up to 16 rows -> panel[kc], A layout (rows past n_rows 0) ----
template <typename Row>
void convert_panel(const std::byte* w, int64_t w_row_bytes, int n_rows, int64_t cols, ChunkPair* panel) {
  for (int64_t kc = 0; kc < chunks(cols); ++kc) {
    for (int n = 0; n < 16; ++n) {
      __m512i h = _mm512_setzero_si512(), l = _mm512_setzero_si512();
      if (n < n_rows) {
        __m512 a, b;
        Row::load32(w + n * w_row_bytes, kc * kChunk, cols, &a, &b);
        split32(a, b, &h, &l);
      }
      _mm512_store_si512(panel[kc].hi + n * kChunk, h);
      _mm512_store_si512(panel[kc].lo + n * kChunk, l);
    }
  }
}

// Tiles: 0, 1 the two token tiles' hi*hi + lo_w*hi sums, 2, 3 their hi*lo_x
// sums (16 rows x 16 tokens f32), 4, 5 weights hi/lo, 6, 7 activations hi/lo.
// All 16 x 64 bytes.
AmxTileConfig make_config() {
  AmxTileConfig c;
  for (int i = 0; i < 8; ++i) {
    c.rows[i] = 16;
    c.colsb[i] = 64;
  }
  return c;
}

// GCC's tile intrinsics paste their tile numbers into the instruction text,
// so the tile numbers below are literals.

// y[t * y_stride + r] = a[r][t] + b[r][t] for t < n_tok, r < n_rows (result
// tiles stored as [16 rows][16 tokens]).
inline void add_results(const float (*a)[16], const float (*b)[16], float* y, int64_t y_stride, int n_tok,
                        int n_rows) {
  __m512 v[16];
  for (int r = 0; r < 16; ++r) v[r] = _mm512_add_ps(_mm512_load_ps(a[r]), _mm512_load_ps(b[r]));
  transpose16(v);  // v[t]: the rows for token t
  const __mmask16 m = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < n_tok; ++t) _mm512_mask_storeu_ps(y + t * y_stride, m, v[t]);
}

// One converted panel x token tiles [tt, tt + kTiles) (kTiles 1 or 2) over all chunks.
template <int kTiles, bool kWeightLo>
void panel_tiles(const ChunkPair* panel, const ChunkPair* x, int64_t nk, int64_t tt, int64_t n_tokens, int n_rows,
                 float* y, int64_t y_stride) {
  const ChunkPair* x0 = x + tt * nk;
  const ChunkPair* x1 = x0 + nk;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t kc = 0; kc < nk; ++kc) {
    _tile_loadd(4, panel[kc].hi, 64);
    if constexpr (kWeightLo) _tile_loadd(5, panel[kc].lo, 64);
    _tile_loadd(6, x0[kc].hi, 64);
    _tile_loadd(7, x0[kc].lo, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(2, 4, 7);
    if constexpr (kWeightLo) _tile_dpbf16ps(0, 5, 6);
    if constexpr (kTiles == 2) {
      _tile_loadd(6, x1[kc].hi, 64);
      _tile_loadd(7, x1[kc].lo, 64);
      _tile_dpbf16ps(1, 4, 6);
      _tile_dpbf16ps(3, 4, 7);
      if constexpr (kWeightLo) _tile_dpbf16ps(1, 5, 6);
    }
  }
  alignas(64) float a[16][kAmxTokens], b[16][kAmxTokens];
  const int64_t t0 = tt * kAmxTokens;
  _tile_stored(0, a, 64);
  _tile_stored(2, b, 64);
  add_results(a, b, y + t0 * y_stride, y_stride, static_cast<int>(std::min<int64_t>(kAmxTokens, n_tokens - t0)),
              n_rows);
  if constexpr (kTiles == 2) {
    const int64_t t1 = t0 + kAmxTokens;
    _tile_stored(1, a, 64);
    _tile_stored(3, b, 64);
    add_results(a, b, y + t1 * y_stride, y_stride, static_cast<int>(std::min<int64_t>(kAmxTokens, n_tokens - t1)),
                n_rows);
  }
}

// Weight panels are converted in groups of up to 1 MiB (4 to 16 panels); each
// token tile pair's activations then come from L3 once per group and from L2
// for the group's other panels, while the group stays in L2. L3 gives a core
// ~1 KiB per 35 ns here, a third of what TDPBF16PS consumes.
int group_panels(int64_t nk) {
  return static_cast<int>(std::clamp<int64_t>(kAmxBf16GroupBytes / (nk * static_cast<int64_t>(sizeof(ChunkPair))), kAmxBf16GroupPanels, 16));
}

// a group of group_panels 16-row panels, each a ChunkPair per 32 columns
int64_t bf16_panel_bytes(int64_t cols) {
  const int64_t nk = chunks(cols);
  return group_panels(nk) * nk * static_cast<int64_t>(sizeof(ChunkPair));
}

// Row is the weight loader; kWeightLo false for BF16 weights (their lo is 0).
template <typename Row, bool kWeightLo>
void bf16_rows(const std::byte* w, int64_t w_row_bytes, int64_t n_rows, const std::byte* acts, int64_t n_tokens,
               int64_t cols, float* y, int64_t y_stride) {
  static const AmxTileConfig config = make_config();
  const int64_t nk = chunks(cols), n_tt = token_tiles(n_tokens);
  const int group = group_panels(nk);
  auto* panels = reinterpret_cast<ChunkPair*>(panel_scratch(static_cast<size_t>(bf16_panel_bytes(cols))));
  const auto* x = reinterpret_cast<const ChunkPair*>(acts);
  _tile_loadconfig(&config);  // per thread; released below so idle threads carry no tile state
  for (int64_t g0 = 0; g0 < n_rows; g0 += group * 16) {
    const int n_panels = static_cast<int>(std::min<int64_t>(group, (n_rows - g0 + 15) / 16));
    for (int p = 0; p < n_panels; ++p) {
      const int64_t r0 = g0 + p * 16;
      convert_panel<Row>(w + r0 * w_row_bytes, w_row_bytes, static_cast<int>(std::min<int64_t>(16, n_rows - r0)),
                         cols, panels + p * nk);
    }
    for (int64_t tt = 0; tt < n_tt; tt += 2) {
      for (int p = 0; p < n_panels; ++p) {
        const int64_t r0 = g0 + p * 16;
        const int nr = static_cast<int>(std::min<int64_t>(16, n_rows - r0));
        if (tt + 2 <= n_tt) {
          panel_tiles<2, kWeightLo>(panels + p * nk, x, nk, tt, n_tokens, nr, y + r0, y_stride);
        } else {
          panel_tiles<1, kWeightLo>(panels + p * nk, x, nk, tt, n_tokens, nr, y + r0, y_stride);
        }
      }
    }
  }
  _tile_release();
}

PanelKernels make_amx_bf16() {
  PanelKernels k;
  k.k[static_cast<int>(DType::kF32)] = {bf16_act_bytes, bf16_prepare, bf16_rows<F32Row, true>, bf16_panel_bytes};
  k.k[static_cast<int>(DType::kF16)] = {bf16_act_bytes, bf16_prepare,
                                         bf16_rows<Half16Row<false>, true>, bf16_panel_bytes};
  k.k[static_cast<int>(DType::kBF16)] = {bf16_act_bytes, bf16_prepare,
                                          bf16_rows<Half16Row<true>, false>, bf16_panel_bytes};
  return k;
}

}  // namespace

const PanelKernels& amx_bf16_kernels() {
  static const PanelKernels kernels = make_amx_bf16();
  return kernels;
}

}  // namespace plimsoll::kernels
