// Q3_K row codecs: ggml's reference quantizer (quantize_row_q3_K_ref: make_q3_quants' search
// per 16 values, 6-bit signed sub-block scales) and the exact dequantizer.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "kernels/codecs.h"

namespace plimsoll::kernels {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

// Symmetric fit of n values to L in [-nmax, nmax) with weights x^2 and up to 5 passes that
// move single values where that raises sumlx^2 / suml2 (ggml's make_q3_quants with do_rmse);
// L returned offset by nmax. Returns the scale.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0.f, amax = 0.f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) { amax = std::fabs(x[i]); max = x[i]; }
  }
  if (amax < kGroupMaxEps) {
    std::memset(L, 0, static_cast<size_t>(n));
    return 0.f;
  }
  const float iscale = -static_cast<float>(nmax) / max;
  float sumlx = 0.f, suml2 = 0.f;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * static_cast<float>(L[i]);
      if (slx > 0) {
        float sl2 = suml2 - w * static_cast<float>(L[i]) * static_cast<float>(L[i]);
        const int new_l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (new_l != L[i]) {
          slx += w * x[i] * static_cast<float>(new_l);
          sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (n_changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.f ? sumlx / suml2 : 0.f;
}

}  // namespace

void quantize_q3_k(const float* x, BlockQ3K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    BlockQ3K& out = y[b];
    int8_t L[kQKK];
    float scales[16];
    float max_scale = 0.f, amax = 0.f;
    for (int j = 0; j < 16; ++j) {
      scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > amax) { amax = std::fabs(scales[j]); max_scale = scales[j]; }
    }
    std::memset(out.scales, 0, sizeof(out.scales));
    if (max_scale != 0.f) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int l = std::clamp(static_cast<int>(static_cast<int8_t>(nearest_int(iscale * scales[j]))), -32, 31) + 32;
        if (j < 8) {
          out.scales[j] = static_cast<uint8_t>(l & 0xF);
        } else {
          out.scales[j - 8] = static_cast<uint8_t>(out.scales[j - 8] | ((l & 0xF) << 4));
        }
        out.scales[j % 4 + 8] = static_cast<uint8_t>(out.scales[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
      }
      out.d = f32_to_f16(1.f / iscale);
    } else {
      out.d = f32_to_f16(0.f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(out.d) * static_cast<float>(q3k_scale(out, j) - 32);
      if (d == 0.f) continue;
      for (int i = 0; i < 16; ++i) L[16 * j + i] = static_cast<int8_t>(std::clamp(nearest_int(x[16 * j + i] / d), -4, 3) + 4);
    }
    // the high bit of element j: bit j / 32 of hmask[j % 32]; the low 2 bits: qs as Q2_K packs them
    std::memset(out.hmask, 0, sizeof(out.hmask));
    for (int j = 0; j < kQKK; ++j) {
      if (L[j] > 3) {
        out.hmask[j % 32] = static_cast<uint8_t>(out.hmask[j % 32] | (1 << (j / 32)));
        L[j] = static_cast<int8_t>(L[j] - 4);
      }
    }
    for (int h = 0; h < 2; ++h) {
      const int8_t* l = L + 128 * h;
      for (int i = 0; i < 32; ++i) {
        out.qs[32 * h + i] = static_cast<uint8_t>(l[i] | (l[i + 32] << 2) | (l[i + 64] << 4) | (l[i + 96] << 6));
      }
    }
  }
}

void dequantize_q3_k(const BlockQ3K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b, y += kQKK) {
    const float d = f16_to_f32(x[b].d);
    for (int e = 0; e < kQKK; ++e) {
      y[e] = d * static_cast<float>(q3k_scale(x[b], e / 16) - 32) * static_cast<float>(q3k_value(x[b], e));
    }
  }
}

}  // namespace plimsoll::kernels
