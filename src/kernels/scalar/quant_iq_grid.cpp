// The grid i-quants' dequantizers (IQ2_XXS ...), written as ggml's dequantize_row_* walk a
// super-block (ggml-quants.c), so each value is the same f32 operations on the same operands:
// bit for bit ggml's. Read-only types: no quantizers (ggml's need an importance matrix and a
// search over grid neighbours), so quantize_row has no entry for them.
#include <cstring>

#include "core/half.h"
#include "kernels/codecs.h"
#include "kernels/iq_grids.h"

namespace plimsoll::kernels {
namespace {

// Byte j of grid entry `entry` (ggml reads the uint64 / uint32 grid entries as bytes).
inline uint8_t grid_u8(uint64_t entry, int j) { return static_cast<uint8_t>(entry >> (8 * j)); }
constexpr float kIQ1Delta = 0.125f;  // ggml's IQ1S_DELTA (and IQ1M_DELTA, the same)
inline float sign_of(uint8_t signs, int j) { return (signs & kIQ2MaskBits[j]) ? -1.f : 1.f; }

}  // namespace

void dequantize_iq2_xxs(const BlockIQ2XXS* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int ib32 = 0; ib32 < kQKK / 32; ++ib32) {
      uint32_t aux32[2];
      std::memcpy(aux32, x[i].qs + 4 * ib32, 2 * sizeof(uint32_t));
      const float db = d * (0.5f + static_cast<float>(aux32[1] >> 28)) * 0.25f;
      for (int l = 0; l < 4; ++l) {
        const uint64_t grid = kIQ2XXSGrid[(aux32[0] >> (8 * l)) & 0xFF];
        const uint8_t signs = kIQ2Signs[(aux32[1] >> (7 * l)) & 127];
        for (int j = 0; j < 8; ++j) y[j] = db * static_cast<float>(grid_u8(grid, j)) * sign_of(signs, j);
        y += 8;
      }
    }
  }
}

void dequantize_iq2_xs(const BlockIQ2XS* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int ib32 = 0; ib32 < kQKK / 32; ++ib32) {
      float db[2];
      db[0] = d * (0.5f + static_cast<float>(x[i].scales[ib32] & 0xF)) * 0.25f;
      db[1] = d * (0.5f + static_cast<float>(x[i].scales[ib32] >> 4)) * 0.25f;
      for (int l = 0; l < 4; ++l) {
        const uint64_t grid = kIQ2XSGrid[x[i].qs[4 * ib32 + l] & 511];
        const uint8_t signs = kIQ2Signs[x[i].qs[4 * ib32 + l] >> 9];
        for (int j = 0; j < 8; ++j) y[j] = db[l / 2] * static_cast<float>(grid_u8(grid, j)) * sign_of(signs, j);
        y += 8;
      }
    }
  }
}

void dequantize_iq3_xxs(const BlockIQ3XXS* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = f16_to_f32(x[i].d);
    const uint8_t* qs = x[i].qs;
    const uint8_t* scales_and_signs = qs + kQKK / 4;
    for (int ib32 = 0; ib32 < kQKK / 32; ++ib32) {
      uint32_t aux32;
      std::memcpy(&aux32, scales_and_signs + 4 * ib32, sizeof(uint32_t));
      const float db = d * (0.5f + static_cast<float>(aux32 >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l) {
        const uint8_t signs = kIQ2Signs[(aux32 >> (7 * l)) & 127];
        const uint32_t grid1 = kIQ3XXSGrid[qs[2 * l]], grid2 = kIQ3XXSGrid[qs[2 * l + 1]];
        for (int j = 0; j < 4; ++j) {
          y[j] = db * static_cast<float>(grid_u8(grid1, j)) * sign_of(signs, j);
          y[j + 4] = db * static_cast<float>(grid_u8(grid2, j)) * sign_of(signs, j + 4);
        }
        y += 8;
      }
      qs += 8;
    }
  }
}

void dequantize_iq1_s(const BlockIQ1S* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = f16_to_f32(x[i].d);
    const uint8_t* qs = x[i].qs;
    const uint16_t* qh = x[i].qh;
    for (int ib = 0; ib < kQKK / 32; ++ib) {
      const float dl = d * static_cast<float>(2 * ((qh[ib] >> 12) & 7) + 1);
      const float delta = (qh[ib] & 0x8000) ? -kIQ1Delta : kIQ1Delta;
      for (int l = 0; l < 4; ++l) {
        const uint64_t grid = kIQ1SGrid[qs[l] | (((qh[ib] >> (3 * l)) & 7) << 8)];
        for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(static_cast<int8_t>(grid_u8(grid, j))) + delta);
        y += 8;
      }
      qs += 4;
    }
  }
}

void dequantize_iq3_s(const BlockIQ3S* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = f16_to_f32(x[i].d);
    const uint8_t* qs = x[i].qs;
    const uint8_t* qh = x[i].qh;
    const uint8_t* signs = x[i].signs;
    for (int ib32 = 0; ib32 < kQKK / 32; ib32 += 2) {
      const float db1 = d * static_cast<float>(1 + 2 * (x[i].scales[ib32 / 2] & 0xF));
      const float db2 = d * static_cast<float>(1 + 2 * (x[i].scales[ib32 / 2] >> 4));
      for (int half = 0; half < 2; ++half) {  // ggml's two loops: qh[0] with db1, then qh[1] with db2
        const float db = half == 0 ? db1 : db2;
        for (int l = 0; l < 4; ++l) {
          const uint32_t grid1 = kIQ3SGrid[qs[2 * l] | ((qh[half] << (8 - 2 * l)) & 256)];
          const uint32_t grid2 = kIQ3SGrid[qs[2 * l + 1] | ((qh[half] << (7 - 2 * l)) & 256)];
          for (int j = 0; j < 4; ++j) {
            y[j] = db * static_cast<float>(grid_u8(grid1, j)) * sign_of(signs[l], j);
            y[j + 4] = db * static_cast<float>(grid_u8(grid2, j)) * sign_of(signs[l], j + 4);
          }
          y += 8;
        }
        qs += 8;
        signs += 4;
      }
      qh += 2;
    }
  }
}

void dequantize_iq2_s(const BlockIQ2S* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = f16_to_f32(x[i].d);
    const uint8_t* qs = x[i].qs;
    const uint8_t* qh = x[i].qh;
    const uint8_t* signs = qs + kQKK / 8;
    for (int ib32 = 0; ib32 < kQKK / 32; ++ib32) {
      float db[2];
      db[0] = d * (0.5f + static_cast<float>(x[i].scales[ib32] & 0xF)) * 0.25f;
      db[1] = d * (0.5f + static_cast<float>(x[i].scales[ib32] >> 4)) * 0.25f;
      for (int l = 0; l < 4; ++l) {
        const float dl = db[l / 2];
        const uint64_t grid = kIQ2SGrid[qs[l] | ((qh[ib32] << (8 - 2 * l)) & 0x300)];
        for (int j = 0; j < 8; ++j) y[j] = dl * static_cast<float>(grid_u8(grid, j)) * sign_of(signs[l], j);
        y += 8;
      }
      qs += 4;
      signs += 4;
    }
  }
}

void dequantize_iq1_m(const BlockIQ1M* x, float* y, int64_t n) {
  float delta[4];
  uint16_t idx[4];
  for (int64_t i = 0; i < n / kQKK; ++i) {
    uint16_t sc[4];  // ggml reads the scales as uint16_t words
    std::memcpy(sc, x[i].scales, sizeof(sc));
    const uint16_t scale = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                                 (sc[3] & 0xF000));
    const float d = f16_to_f32(scale);
    const uint8_t* qs = x[i].qs;
    const uint8_t* qh = x[i].qh;
    for (int ib = 0; ib < kQKK / 32; ++ib) {
      const float dl1 = d * static_cast<float>(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1);
      const float dl2 = d * static_cast<float>(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1);
      idx[0] = static_cast<uint16_t>(qs[0] | ((qh[0] << 8) & 0x700));
      idx[1] = static_cast<uint16_t>(qs[1] | ((qh[0] << 4) & 0x700));
      idx[2] = static_cast<uint16_t>(qs[2] | ((qh[1] << 8) & 0x700));
      idx[3] = static_cast<uint16_t>(qs[3] | ((qh[1] << 4) & 0x700));
      delta[0] = (qh[0] & 0x08) ? -kIQ1Delta : kIQ1Delta;
      delta[1] = (qh[0] & 0x80) ? -kIQ1Delta : kIQ1Delta;
      delta[2] = (qh[1] & 0x08) ? -kIQ1Delta : kIQ1Delta;
      delta[3] = (qh[1] & 0x80) ? -kIQ1Delta : kIQ1Delta;
      for (int l = 0; l < 4; ++l) {
        const uint64_t grid = kIQ1SGrid[idx[l]];
        const float dl = l < 2 ? dl1 : dl2;
        for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(static_cast<int8_t>(grid_u8(grid, j))) + delta[l]);
        y += 8;
      }
      qs += 4;
      qh += 2;
    }
  }
}

}  // namespace plimsoll::kernels
