// IQ4_NL and IQ4_XS row codecs: ggml's reference quantizers (quantize_row_iq4_nl_ref,
// quantize_row_iq4_xs_ref: no importance weights, so each value weighs x^2) and the exact
// dequantizers. Both map 4-bit indices through the 16-value table kIQ4NLValues.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "kernels/codecs.h"

namespace plimsoll::kernels {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

// The table index whose value is nearest x (ties to the lower index; ggml's best_index_int8).
int best_index(float x) {
  const int8_t* v = kIQ4NLValues;
  if (x <= v[0]) return 0;
  if (x >= v[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < v[mid]) hi = mid; else lo = mid;
  }
  return x - v[hi - 1] < v[hi] - x ? hi - 1 : hi;
}

// One block of 32: its scale fitted by weighted least squares over the table values, the
// indices into L (ggml's quantize_row_iq4_nl_impl per block). ntry < 0: IQ4_NL's reference
// (one fit from -max / 127's indices); ntry > 0: IQ4_XS's (2 ntry + 1 more candidate
// scales, the indices of the first kept). A block below kGroupMaxEps returns 0 and leaves L.
float fit_block(const float* x, int ntry, uint8_t* L) {
  float amax = 0.f, max = 0.f;
  for (int j = 0; j < kQK; ++j) {
    if (std::fabs(x[j]) > amax) { amax = std::fabs(x[j]); max = x[j]; }
  }
  if (amax < kGroupMaxEps) return 0.f;
  const float v0 = kIQ4NLValues[0];
  float d = ntry > 0 ? -max / v0 : max / v0;
  float id = 1.f / d;
  float sumqx = 0.f, sumq2 = 0.f;
  for (int j = 0; j < kQK; ++j) {
    const int l = best_index(id * x[j]);
    L[j] = static_cast<uint8_t>(l);
    const float q = kIQ4NLValues[l], w = x[j] * x[j];
    sumqx += w * q * x[j];
    sumq2 += w * q * q;
  }
  d = sumqx / sumq2;
  float best = d * sumqx;
  for (int itry = -ntry; itry <= ntry; ++itry) {
    id = (static_cast<float>(itry) + v0) / max;
    sumqx = sumq2 = 0.f;
    for (int j = 0; j < kQK; ++j) {
      const float q = kIQ4NLValues[best_index(id * x[j])], w = x[j] * x[j];
      sumqx += w * q * x[j];
      sumq2 += w * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// 32 indices -> 16 bytes: element j < 16 in the low nibble of byte j, j >= 16 in the high nibble.
void pack_nibbles(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
}

}  // namespace

void quantize_iq4_nl(const float* x, BlockIQ4NL* y, int64_t n) {
  uint8_t L[kQK] = {};  // as ggml's: one array for the row (an all-zero block keeps the last indices)
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    y[b].d = f32_to_f16(fit_block(x, -1, L));
    pack_nibbles(L, y[b].qs);
  }
}

void dequantize_iq4_nl(const BlockIQ4NL* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kIQ4NLValues[x[b].qs[j] & 0xF]);
      y[j + 16] = d * static_cast<float>(kIQ4NLValues[x[b].qs[j] >> 4]);
    }
  }
}

void quantize_iq4_xs(const float* x, BlockIQ4XS* y, int64_t n) {
  uint8_t L[kQKK] = {};
  for (int64_t sb = 0; sb < n / kQKK; ++sb, x += kQKK) {
    BlockIQ4XS& out = y[sb];
    float scales[kQKK / kQK];
    float max_scale = 0.f, amax_scale = 0.f;
    for (int b = 0; b < kQKK / kQK; ++b) {
      scales[b] = fit_block(x + kQK * b, 7, L + kQK * b);
      if (std::fabs(scales[b]) > amax_scale) { amax_scale = std::fabs(scales[b]); max_scale = scales[b]; }
    }
    // the 6-bit block scales against the super-scale d = -max / 32, and every index again
    // for its block's rounded scale
    const float d = -max_scale / 32.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    out.d = f32_to_f16(d);
    out.scales_h = 0;
    for (int b = 0; b < kQKK / kQK; ++b) {
      const int l = std::clamp(nearest_int(id * scales[b]), -32, 31);
      const float dl = d * static_cast<float>(l);
      const float idl = dl != 0.f ? 1.f / dl : 0.f;
      for (int j = 0; j < kQK; ++j) L[kQK * b + j] = static_cast<uint8_t>(best_index(idl * x[kQK * b + j]));
      const int u = l + 32;
      if (b % 2 == 0) {
        out.scales_l[b / 2] = static_cast<uint8_t>(u & 0xF);
      } else {
        out.scales_l[b / 2] = static_cast<uint8_t>(out.scales_l[b / 2] | ((u & 0xF) << 4));
      }
      out.scales_h = static_cast<uint16_t>(out.scales_h | ((u >> 4) << (2 * b)));
      pack_nibbles(L + kQK * b, out.qs + 16 * b);
    }
  }
}

void dequantize_iq4_xs(const BlockIQ4XS* x, float* y, int64_t n) {
  for (int64_t sb = 0; sb < n / kQKK; ++sb) {
    const float d = f16_to_f32(x[sb].d);
    for (int b = 0; b < kQKK / kQK; ++b, y += kQK) {
      const float dl = d * static_cast<float>(iq4xs_scale(x[sb], b) - 32);
      const uint8_t* qs = x[sb].qs + 16 * b;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIQ4NLValues[qs[j] & 0xF]);
        y[j + 16] = dl * static_cast<float>(kIQ4NLValues[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace plimsoll::kernels
