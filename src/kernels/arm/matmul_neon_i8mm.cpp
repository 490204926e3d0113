// NEON + i8mm panel kernels for Q8_0 / Q4_0 batches (built with
// -march=armv8.2-a+dotprod+i8mm only; chosen at run time when the kernel reports
// HWCAP2_I8MM as well as dotprod). SMMLA multiplies a 2 x 8 int8 matrix by an
// 8 x 2 one into a 2 x 2 int32 block: two weight rows against two tokens over 8
// columns in one instruction, 32 products where SDOT does 16.
//
// Layout: a pair of rows (or tokens) and a 32-element block are 4 steps of 16
// bytes, step s = [first's elements 8s..8s+7, second's elements 8s..8s+7], plus
// the pair's block scales as the 2 x 2 lanes want them: weights [d0, d0, d1, d1],
// tokens [d0, d1, d0, d1], so that lane (i, j) of SMMLA's result is scaled by
// their product. Activations are quantized with quantize_q8_0 itself (bit-exact
// with the row kernels); weights are packed kRows rows at a time into the
// per-thread scratch, Q4_0 unpacked to signed nibble - 8, so both dtypes share one
// tile. Register tile 8 rows x 4 tokens (4 x 2 pairs): 8 int32 + 8 f32
// accumulators, 4 weight and 2 activation vectors a step (6 loads for 8 SMMLA);
// the int32 block sums are scaled into the f32 lanes once per block, in block
// order, as the scalar twin adds them.
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/arm/neon_blocks.h"
#include "kernels/blocks.h"
#include "kernels/codecs.h"
#include "kernels/matmul_impl.h"
#include "kernels/scratch.h"

namespace plimsoll::kernels {
namespace {

constexpr int kRows = 8;  // 4 row pairs
constexpr int kTok = 4;   // 2 token pairs

struct PairBlock {
  int8_t q[4][16];  // [step s][8 i + k] = element 8s + k of the pair's member i
  float d[4];       // weights [d0, d0, d1, d1]; tokens [d0, d1, d0, d1]
};
static_assert(sizeof(PairBlock) == 80);

int64_t padded_tokens(int64_t n) { return (n + kPanelTokens - 1) / kPanelTokens * kPanelTokens; }
// A token pair's prepared blocks: [pair][block].
int64_t pair_bytes(int64_t cols) { return cols / kQK * static_cast<int64_t>(sizeof(PairBlock)); }
int64_t act_bytes(int64_t n_tokens, int64_t cols) { return padded_tokens(n_tokens) / 2 * pair_bytes(cols); }

// Two members' 32 values (a, b: lo = elements 0..15, hi = 16..31) -> the 4 steps.
inline void store_pair(int8x16_t a_lo, int8x16_t a_hi, int8x16_t b_lo, int8x16_t b_hi, PairBlock* out) {
  const int64x2_t al = vreinterpretq_s64_s8(a_lo), ah = vreinterpretq_s64_s8(a_hi);
  const int64x2_t bl = vreinterpretq_s64_s8(b_lo), bh = vreinterpretq_s64_s8(b_hi);
  vst1q_s8(out->q[0], vreinterpretq_s8_s64(vzip1q_s64(al, bl)));
  vst1q_s8(out->q[1], vreinterpretq_s8_s64(vzip2q_s64(al, bl)));
  vst1q_s8(out->q[2], vreinterpretq_s8_s64(vzip1q_s64(ah, bh)));
  vst1q_s8(out->q[3], vreinterpretq_s8_s64(vzip2q_s64(ah, bh)));
}

// Token tiles [tt0, tt1) of x ([n_tokens, cols] f32); tokens past n_tokens are zeros.
void prepare(const float* x, int64_t n_tokens, int64_t cols, int64_t tt0, int64_t tt1, std::byte* dst) {
  const int64_t nb = cols / kQK;
  for (int64_t p = tt0 * kPanelTokens / 2; p < tt1 * kPanelTokens / 2; ++p) {
    auto* out = reinterpret_cast<PairBlock*>(dst + p * pair_bytes(cols));
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ8_0 q[2] = {};
      for (int i = 0; i < 2; ++i) {
        const int64_t t = 2 * p + i;
        if (t < n_tokens) quantize_q8_0(x + t * cols + b * kQK, &q[i], kQK);
      }
      int8x16_t lo[2], hi[2];
      for (int i = 0; i < 2; ++i) load_block(q[i], &lo[i], &hi[i]);
      store_pair(lo[0], hi[0], lo[1], hi[1], &out[b]);
      const float d0 = half_to_f32(q[0].d), d1 = half_to_f32(q[1].d);
      const float d[4] = {d0, d1, d0, d1};
      std::memcpy(out[b].d, d, sizeof(d));
    }
  }
}

// kRows rows (n_rows live, the rest zeros) -> packed[b * 4 + pair].
template <typename Block>
void pack_rows(const std::byte* w, int64_t w_row_bytes, int n_rows, int64_t cols, PairBlock* packed) {
  const int64_t nb = cols / kQK;
  for (int pr = 0; pr < kRows / 2; ++pr) {
    const Block* row[2];
    for (int i = 0; i < 2; ++i) {
      const int r = 2 * pr + i;
      row[i] = r < n_rows ? reinterpret_cast<const Block*>(w + r * w_row_bytes) : nullptr;
    }
    for (int64_t b = 0; b < nb; ++b) {
      int8x16_t lo[2], hi[2];
      float d[2];
      for (int i = 0; i < 2; ++i) {
        if (row[i] == nullptr) {
          lo[i] = hi[i] = vdupq_n_s8(0);
          d[i] = 0.0f;
        } else {
          load_block(row[i][b], &lo[i], &hi[i]);
          d[i] = half_to_f32(row[i][b].d);
        }
      }
      PairBlock& out = packed[b * (kRows / 2) + pr];
      store_pair(lo[0], hi[0], lo[1], hi[1], &out);
      const float dd[4] = {d[0], d[0], d[1], d[1]};
      std::memcpy(out.d, dd, sizeof(dd));
    }
  }
}

// acc[pr][tp] lane 2i + j: row 2 pr + i, token 2 tp + j.
inline void tile(const PairBlock* w, const PairBlock* x0, const PairBlock* x1, int64_t nb,
                 float32x4_t (&acc)[kRows / 2][kTok / 2]) {
  for (auto& a : acc) {
    for (auto& v : a) v = vdupq_n_f32(0.0f);
  }
  const PairBlock* x[2] = {x0, x1};
  for (int64_t b = 0; b < nb; ++b) {
    const PairBlock* wb = w + b * (kRows / 2);
    int32x4_t iacc[kRows / 2][kTok / 2];
    for (auto& a : iacc) {
      for (auto& v : a) v = vdupq_n_s32(0);
    }
    for (int s = 0; s < 4; ++s) {
      int8x16_t xv[kTok / 2];
      for (int tp = 0; tp < kTok / 2; ++tp) xv[tp] = vld1q_s8(x[tp][b].q[s]);
      for (int pr = 0; pr < kRows / 2; ++pr) {
        const int8x16_t wv = vld1q_s8(wb[pr].q[s]);
        for (int tp = 0; tp < kTok / 2; ++tp) iacc[pr][tp] = vmmlaq_s32(iacc[pr][tp], wv, xv[tp]);
      }
    }
    for (int tp = 0; tp < kTok / 2; ++tp) {
      const float32x4_t dx = vld1q_f32(x[tp][b].d);
      for (int pr = 0; pr < kRows / 2; ++pr) {
        acc[pr][tp] = vfmaq_f32(acc[pr][tp], vcvtq_f32_s32(iacc[pr][tp]), vmulq_f32(vld1q_f32(wb[pr].d), dx));
      }
    }
  }
}

// one kRows-row panel of row pairs
int64_t panel_bytes(int64_t cols) { return cols / kQK * (kRows / 2) * static_cast<int64_t>(sizeof(PairBlock)); }

template <typename Block>
void rows(const std::byte* w, int64_t w_row_bytes, int64_t n_rows, const std::byte* acts, int64_t n_tokens,
          int64_t cols, float* y, int64_t y_stride) {
  const int64_t nb = cols / kQK;
  auto* packed = reinterpret_cast<PairBlock*>(panel_scratch(static_cast<size_t>(panel_bytes(cols))));
  for (int64_t r0 = 0; r0 < n_rows; r0 += kRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kRows, n_rows - r0));
    pack_rows<Block>(w + r0 * w_row_bytes, w_row_bytes, nr, cols, packed);
    for (int64_t t0 = 0; t0 < n_tokens; t0 += kTok) {  // tokens past n_tokens: zero padding pairs
      const auto* x0 = reinterpret_cast<const PairBlock*>(acts + (t0 / 2) * pair_bytes(cols));
      const auto* x1 = reinterpret_cast<const PairBlock*>(acts + (t0 / 2 + 1) * pair_bytes(cols));
      float32x4_t acc[kRows / 2][kTok / 2];
      tile(packed, x0, x1, nb, acc);
      const int nt = static_cast<int>(std::min<int64_t>(kTok, n_tokens - t0));
      for (int pr = 0; pr < kRows / 2; ++pr) {
        for (int tp = 0; tp < kTok / 2; ++tp) {
          float lanes[4];
          vst1q_f32(lanes, acc[pr][tp]);
          for (int i = 0; i < 2; ++i) {
            for (int j = 0; j < 2; ++j) {
              const int r = 2 * pr + i, t = 2 * tp + j;
              if (r < nr && t < nt) y[(t0 + t) * y_stride + r0 + r] = lanes[2 * i + j];
            }
          }
        }
      }
    }
  }
}

PanelKernels make_panels() {
  static_assert(kPanelTokens % kTok == 0);
  PanelKernels k = neon_dot_panel_kernels();  // the float entries: NEON's outer products
  k.k[static_cast<int>(DType::kQ8_0)] = {act_bytes, prepare, rows<BlockQ8_0>, panel_bytes};
  k.k[static_cast<int>(DType::kQ4_0)] = {act_bytes, prepare, rows<BlockQ4_0>, panel_bytes};
  return k;
}

}  // namespace

const PanelKernels& neon_i8mm_panel_kernels() {
  static const PanelKernels kernels = make_panels();
  return kernels;
}

}  // namespace plimsoll::kernels
