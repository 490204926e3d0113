// AVX-512 broadcast kernels for float weights (F32, F16, BF16) over batches of
// tokens (batched decode from 10-16 tokens up to where AMX-BF16 takes over, all
// batches without AMX). Activations are transposed once per call into token
// tiles xt [cols][16 tokens]; each panel of 16 weight rows is packed (F16 and
// BF16 widened) into f32 chunks [16 rows][16 columns] in a per-thread scratch,
// and keeps one accumulator per row, lane t = token t:
//   acc[r] += broadcast(w[r][c]) * xt[c]    for every column c
// Each weight element is one broadcast operand of one FMA per token tile, no
// horizontal sums, one pointer for all 16 rows; while the first token tile
// runs, the next panel is prefetched into L2, so packing it reads no memory.
// The dot-product tiles (tiles_avx512.cpp) reread a 4 x 4 block's activations
// from L2 once per 4 weight rows, which bounds them once a batch's activations
// outgrow L1 (16 tokens of 768 f32 columns fill it).
// Sums go column by column in f32, as the scalar twin does (the order of the
// additions differs).
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors (GCC PR105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/matmul_impl.h"
#include "kernels/scratch.h"
#include "kernels/x86/transpose_avx512.h"

namespace plimsoll::kernels {
namespace {

constexpr int kTok = kPanelTokens;  // tokens per tile (zmm lanes)
constexpr int kRows = kPanelRows;   // weight rows per panel (accumulators)
static_assert(kTok == 16 && kRows == 16);

int64_t token_tiles(int64_t n_tokens) { return (n_tokens + kTok - 1) / kTok; }
int64_t chunks(int64_t cols) { return (cols + 15) / 16; }  // 16 columns each, the last zero-padded

// ---- activations: x [n_tokens, cols] f32 -> xt[tt] [chunks * 16][16 tokens] ----
int64_t panel_act_bytes(int64_t n_tokens, int64_t cols) {
  return token_tiles(n_tokens) * chunks(cols) * 16 * kTok * static_cast<int64_t>(sizeof(float));
}

void panel_prepare(const float* x, int64_t n_tokens, int64_t cols, int64_t tt0, int64_t tt1, std::byte* dst) {
  float* xt_all = reinterpret_cast<float*>(dst);
  for (int64_t tt = tt0; tt < tt1; ++tt) {
    float* xt = xt_all + tt * chunks(cols) * 16 * kTok;
    const int n_tok = static_cast<int>(std::min<int64_t>(kTok, n_tokens - tt * kTok));
    for (int64_t c0 = 0; c0 < cols; c0 += 16) {
      const __mmask16 m = static_cast<__mmask16>(c0 + 16 <= cols ? 0xFFFF : (1u << (cols - c0)) - 1);
      __m512 v[16];
      for (int t = 0; t < 16; ++t) {
        v[t] = t < n_tok ? _mm512_maskz_loadu_ps(m, x + (tt * kTok + t) * cols + c0) : _mm512_setzero_ps();
      }
      transpose16(v);  // v[j] lane t: token t, column c0 + j
      for (int j = 0; j < 16; ++j) _mm512_store_ps(xt + (c0 + j) * kTok, v[j]);
    }
  }
}

// ---- weights: 16 rows packed as panel[k][r][j] = w[r][16k + j] in f32 (zeros
// past cols and for rows >= n_rows), so one pointer reaches every row's
// broadcast at a fixed offset ----
struct F32Load {
  static __m512 load(const std::byte* row, int64_t c, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + c);
  }
};
struct F16Load {
  static __m512 load(const std::byte* row, int64_t c, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + c));
  }
};
struct BF16Load {  // exact (<< 16), as the scalar twin
  static __m512 load(const std::byte* row, int64_t c, __mmask16 m) {
    const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + c);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
};

// Rows are read front to back, one at a time (one stream for the prefetcher).
template <typename L>
void pack_panel(const std::byte* w, int64_t w_row_bytes, int n_rows, int64_t cols, float* panel) {
  const int64_t nk = chunks(cols);
  for (int r = 0; r < kRows; ++r) {
    if (r >= n_rows) {
      for (int64_t k = 0; k < nk; ++k) _mm512_store_ps(panel + (k * kRows + r) * 16, _mm512_setzero_ps());
      continue;
    }
    const std::byte* row = w + r * w_row_bytes;
    int64_t k = 0;
    for (; (k + 1) * 16 <= cols; ++k) _mm512_store_ps(panel + (k * kRows + r) * 16, L::load(row, k * 16, 0xFFFF));
    if (k < nk) {
      const __mmask16 m = static_cast<__mmask16>((1u << (cols - k * 16)) - 1);
      _mm512_store_ps(panel + (k * kRows + r) * 16, L::load(row, k * 16, m));
    }
  }
}

// acc[r] lane t = sum over columns of panel row r x token t of the tile xt.
// next (null: none): the next panel's 16 rows, w_row_bytes apart, which chunk
// k asks L2 for one cache line of each, at byte 64 k: a panel is as many
// lines a row as it has chunks, so the next panel streams in while this one
// computes (packing reads it from L2, not memory).
inline void panel_sums(const float* panel, const float* xt, int64_t nk, const std::byte* next, int64_t w_row_bytes,
                       int next_rows, __m512 (&acc)[kRows]) {
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t k = 0; k < nk; ++k) {
    const float* p = panel + k * kRows * 16;
    const float* x = xt + k * 16 * kTok;
    if (next != nullptr && k * 64 < w_row_bytes) {
      for (int r = 0; r < next_rows; ++r) _mm_prefetch(reinterpret_cast<const char*>(next + r * w_row_bytes + k * 64), _MM_HINT_T1);
    }
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) {
      const __m512 xv = _mm512_load_ps(x + j * kTok);
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(p[r * 16 + j]), xv, acc[r]);
    }
  }
}

// y[t * y_stride + r] = acc[r] lane t, for r < n_rows, t < n_tok.
inline void store_sums(__m512 (&acc)[kRows], int n_rows, int n_tok, float* y, int64_t y_stride) {
  transpose16(acc);  // acc[t] lane r
  const __mmask16 m = static_cast<__mmask16>(n_rows == 16 ? 0xFFFF : (1u << n_rows) - 1);
  for (int t = 0; t < n_tok; ++t) _mm512_mask_storeu_ps(y + t * y_stride, m, acc[t]);
}

// one 16-row panel of f32: kRows x 16 floats per chunk of columns
int64_t panel_weight_bytes(int64_t cols) { return chunks(cols) * kRows * 16 * static_cast<int64_t>(sizeof(float)); }

// Each 16-row panel is packed once (it stays in L2), then meets every token tile.
template <typename L>
void panel_rows(const std::byte* w, int64_t w_row_bytes, int64_t n_rows, const std::byte* acts, int64_t n_tokens,
                int64_t cols, float* y, int64_t y_stride) {
  const auto* xt_all = reinterpret_cast<const float*>(acts);
  const int64_t nk = chunks(cols);
  auto* panel = reinterpret_cast<float*>(panel_scratch(static_cast<size_t>(panel_weight_bytes(cols))));
  for (int64_t r0 = 0; r0 < n_rows; r0 += kRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kRows, n_rows - r0));
    pack_panel<L>(w + r0 * w_row_bytes, w_row_bytes, nr, cols, panel);
    const int64_t r1 = r0 + kRows;  // the next panel, prefetched while the first token tile runs
    const int next_rows = static_cast<int>(std::clamp<int64_t>(n_rows - r1, 0, kRows));
    for (int64_t tt = 0; tt < token_tiles(n_tokens); ++tt) {
      __m512 acc[kRows];
      const std::byte* next = tt == 0 && next_rows > 0 ? w + r1 * w_row_bytes : nullptr;
      panel_sums(panel, xt_all + tt * nk * 16 * kTok, nk, next, w_row_bytes, next_rows, acc);
      store_sums(acc, nr, static_cast<int>(std::min<int64_t>(kTok, n_tokens - tt * kTok)),
                 y + tt * kTok * y_stride + r0, y_stride);
    }
  }
}

PanelKernels make_panels() {
  PanelKernels k;
  k.k[static_cast<int>(DType::kF32)] = {panel_act_bytes, panel_prepare, panel_rows<F32Load>, panel_weight_bytes};
  k.k[static_cast<int>(DType::kF16)] = {panel_act_bytes, panel_prepare, panel_rows<F16Load>, panel_weight_bytes};
  k.k[static_cast<int>(DType::kBF16)] = {panel_act_bytes, panel_prepare, panel_rows<BF16Load>, panel_weight_bytes};
  return k;
}

}  // namespace

const PanelKernels& avx512_panel_kernels() {
  static const PanelKernels kernels = make_panels();
  return kernels;
}

}  // namespace plimsoll::kernels
