// AMX-INT8 kernels for Q8_0 / Q4_0 weights over batches of tokens (prefill,
// batched decode). One TDPBSSD multiplies a block (32 columns) of 16 weight rows
// (int8, row-major: Q8_0 straight from the weights, Q4_0 unpacked to nibble - 8)
// by the same block of 16 tokens' int8 activations (VNNI layout, prepared per
// call) into 16 x 16 exact int32 block dots. AVX-512 then converts each to f32
// and adds it times d_w[row] * d_x[token] to an f32 accumulator: the scalar
// twin's arithmetic, summed in the same block order.
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

namespace plimsoll::kernels {
namespace {

// Prepared activations, per token tile (kAmxTokens tokens) and block: the block's
// int8 values in the VNNI layout TDPBSSD wants for its B operand (value k of
// token t at byte (k / 4) * 64 + t * 4 + k % 4), then the tokens' f32 scales.
// Tokens past n_tokens are zero (value and scale).
struct ActBlock {
  int8_t qs[kQK * kAmxTokens];  // 8 rows of 64 bytes
  float d[kAmxTokens];
};
static_assert(sizeof(ActBlock) == kAmxInt8ActBlockBytes);

int64_t token_tiles(int64_t n_tokens) { return (n_tokens + kAmxTokens - 1) / kAmxTokens; }

int64_t amx_act_bytes(int64_t n_tokens, int64_t cols) {
  return token_tiles(n_tokens) * (cols / kQK) * static_cast<int64_t>(sizeof(ActBlock));
}

void amx_prepare(const float* x, int64_t n_tokens, int64_t cols, int64_t tt0, int64_t tt1, std::byte* dst) {
  const int64_t nb = cols / kQK;
  for (int64_t tt = tt0; tt < tt1; ++tt) {
    ActBlock* out = reinterpret_cast<ActBlock*>(dst) + tt * nb;
    for (int t = 0; t < kAmxTokens; ++t) {
      const int64_t token = tt * kAmxTokens + t;
      if (token >= n_tokens) {
        for (int64_t b = 0; b < nb; ++b) {
          for (int g = 0; g < kQK / 4; ++g) std::memset(out[b].qs + g * 64 + t * 4, 0, 4);
          out[b].d[t] = 0.f;
        }
        continue;
      }
      const float* xt = x + token * cols;
      for (int64_t b = 0; b < nb; ++b) {
        alignas(16) int8_t q[kQK];
        __m128i lo, hi;
        out[b].d[t] = quantize_block(xt + b * kQK, &lo, &hi);
        _mm_store_si128(reinterpret_cast<__m128i*>(q), lo);
        _mm_store_si128(reinterpret_cast<__m128i*>(q + 16), hi);
        for (int g = 0; g < kQK / 4; ++g) std::memcpy(out[b].qs + g * 64 + t * 4, q + 4 * g, 4);
      }
    }
  }
}

// Tiles: 0, 1 weights (16 rows x 32 bytes), 2, 3 activations (8 rows x 64
// bytes), 4, 5 int32 results (16 x 16); two blocks in flight.
AmxTileConfig make_config() {
  AmxTileConfig c;
  for (int i : {0, 1}) { c.rows[i] = kAmxRows; c.colsb[i] = kQK; }
  for (int i : {2, 3}) { c.rows[i] = kQK / 4; c.colsb[i] = 64; }
  for (int i : {4, 5}) { c.rows[i] = kAmxRows; c.colsb[i] = 64; }
  return c;
}

// The weights of one panel of up to 16 rows as TDPBSSD's A operand: block b's
// 16 x 32 int8 at a + b * block_step, rows `stride` bytes apart (rows past the
// panel are zero), and the rows' block scales as f32, dw[b * 16 + r].
struct Panel {
  const int8_t* a;
  int64_t stride, block_step;
  const float* dw;
};

struct Q8Weights {
  using Block = BlockQ8_0;
  // Full panels are read in place; a short last panel is copied, padded with zero rows.
  static Panel panel(const std::byte* w, int64_t w_row_bytes, int n_rows, int64_t nb, std::byte* scratch,
                     float* dw) {
    if (n_rows == kAmxRows) {
      return {reinterpret_cast<const int8_t*>(w) + offsetof(Block, qs), w_row_bytes,
              static_cast<int64_t>(sizeof(Block)), dw};
    }
    auto* a = reinterpret_cast<int8_t*>(scratch);
    for (int64_t b = 0; b < nb; ++b) {
      for (int r = 0; r < kAmxRows; ++r) {
        int8_t* dst = a + (b * kAmxRows + r) * kQK;
        if (r < n_rows) {
          std::memcpy(dst, reinterpret_cast<const Block*>(w + r * w_row_bytes)[b].qs, kQK);
        } else {
          std::memset(dst, 0, kQK);
        }
      }
    }
    return {a, kQK, kQK * kAmxRows, dw};
  }
};

struct Q4Weights {
  using Block = BlockQ4_0;
  // Nibbles - 8 as int8, elements in order (low nibbles are 0..15, high 16..31).
  static Panel panel(const std::byte* w, int64_t w_row_bytes, int n_rows, int64_t nb, std::byte* scratch,
                     float* dw) {
    auto* a = reinterpret_cast<int8_t*>(scratch);
    const __m128i low4 = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    for (int64_t b = 0; b < nb; ++b) {
      for (int r = 0; r < kAmxRows; ++r) {
        int8_t* dst = a + (b * kAmxRows + r) * kQK;
        if (r < n_rows) {
          const __m128i q = _mm_loadu_si128(
              reinterpret_cast<const __m128i*>(reinterpret_cast<const Block*>(w + r * w_row_bytes)[b].qs));
          _mm_store_si128(reinterpret_cast<__m128i*>(dst), _mm_sub_epi8(_mm_and_si128(q, low4), eight));
          _mm_store_si128(reinterpret_cast<__m128i*>(dst + 16),
                          _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low4), eight));
        } else {
          std::memset(dst, 0, kQK);
        }
      }
    }
    return {a, kQK, kQK * kAmxRows, dw};
  }
};

// dw[b * 16 + r]: f32 scale of block b of row r (0 past n_rows).
template <typename Block>
void panel_scales(const std::byte* w, int64_t w_row_bytes, int n_rows, int64_t nb, float* dw) {
  for (int r = 0; r < kAmxRows; ++r) {
    if (r >= n_rows) {
      for (int64_t b = 0; b < nb; ++b) dw[b * kAmxRows + r] = 0.f;
      continue;
    }
    const Block* row = reinterpret_cast<const Block*>(w + r * w_row_bytes);
    for (int64_t b = 0; b < nb; ++b) dw[b * kAmxRows + r] = _cvtsh_ss(row[b].d);
  }
}

// acc[r] (16 tokens) += f32(c[r]) * (d_x * d_w[r]) for one block's 16 x 16 int32 dots.
inline void scale_block(const int32_t (*c)[kAmxTokens], const float* dw, const float* dx, __m512 (&acc)[kAmxRows]) {
  const __m512 d = _mm512_load_ps(dx);
  for (int r = 0; r < kAmxRows; ++r) {
    const __m512 s = _mm512_mul_ps(d, _mm512_set1_ps(dw[r]));
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c[r])), s, acc[r]);
  }
}

// One panel x one token tile over all nb blocks; writes y[t * y_stride + r]
// for t < n_tok, r < n_rows.
void panel_tile(const Panel& p, const ActBlock* x, int64_t nb, int n_rows, int n_tok, float* y, int64_t y_stride) {
  alignas(64) int32_t c[2][kAmxRows][kAmxTokens];
  __m512 acc[kAmxRows];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    _tile_loadd(0, p.a + b * p.block_step, p.stride);
    _tile_loadd(2, x[b].qs, 64);
    _tile_zero(4);
    _tile_dpbssd(4, 0, 2);
    _tile_stored(4, c[0], 64);
    _tile_loadd(1, p.a + (b + 1) * p.block_step, p.stride);
    _tile_loadd(3, x[b + 1].qs, 64);
    _tile_zero(5);
    _tile_dpbssd(5, 1, 3);
    _tile_stored(5, c[1], 64);
    scale_block(c[0], p.dw + b * kAmxRows, x[b].d, acc);
    scale_block(c[1], p.dw + (b + 1) * kAmxRows, x[b + 1].d, acc);
  }
  if (b < nb) {
    _tile_loadd(0, p.a + b * p.block_step, p.stride);
    _tile_loadd(2, x[b].qs, 64);
    _tile_zero(4);
    _tile_dpbssd(4, 0, 2);
    _tile_stored(4, c[0], 64);
    scale_block(c[0], p.dw + b * kAmxRows, x[b].d, acc);
  }
  transpose16(acc);  // acc[t]: the panel's rows for token t
  const __mmask16 m = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < n_tok; ++t) _mm512_mask_storeu_ps(y + t * y_stride, m, acc[t]);
}

// a panel's int8 values and f32 block scales
int64_t amx_panel_bytes(int64_t cols) { return cols / kQK * kAmxInt8PanelBytesPerBlock; }

template <typename Weights>
void amx_rows(const std::byte* w, int64_t w_row_bytes, int64_t n_rows, const std::byte* acts, int64_t n_tokens,
              int64_t cols, float* y, int64_t y_stride) {
  static const AmxTileConfig config = make_config();
  const int64_t nb = cols / kQK, n_tt = token_tiles(n_tokens);
  std::byte* scratch = panel_scratch(static_cast<size_t>(amx_panel_bytes(cols)));
  float* dw = reinterpret_cast<float*>(scratch + nb * kQK * kAmxRows);
  const ActBlock* x = reinterpret_cast<const ActBlock*>(acts);
  _tile_loadconfig(&config);  // per thread; released below so idle threads carry no tile state
  for (int64_t r0 = 0; r0 < n_rows; r0 += kAmxRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kAmxRows, n_rows - r0));
    const std::byte* wp = w + r0 * w_row_bytes;
    panel_scales<typename Weights::Block>(wp, w_row_bytes, nr, nb, dw);
    const Panel p = Weights::panel(wp, w_row_bytes, nr, nb, scratch, dw);
    for (int64_t tt = 0; tt < n_tt; ++tt) {
      const int n_tok = static_cast<int>(std::min<int64_t>(kAmxTokens, n_tokens - tt * kAmxTokens));
      panel_tile(p, x + tt * nb, nb, nr, n_tok, y + tt * kAmxTokens * y_stride + r0, y_stride);
    }
  }
  _tile_release();
}

PanelKernels make_amx() {
  PanelKernels k;
  k.k[static_cast<int>(DType::kQ8_0)] = {amx_act_bytes, amx_prepare, amx_rows<Q8Weights>, amx_panel_bytes};
  k.k[static_cast<int>(DType::kQ4_0)] = {amx_act_bytes, amx_prepare, amx_rows<Q4Weights>, amx_panel_bytes};
  add_amx_kquant_kernels(&k);
  return k;
}

}  // namespace

const PanelKernels& amx_kernels() {
  static const PanelKernels kernels = make_amx();
  return kernels;
}

}  // namespace plimsoll::kernels
