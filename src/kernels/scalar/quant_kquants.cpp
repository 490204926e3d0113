// Q4_K, Q5_K, Q6_K and Q8_K row codecs: ggml's plain reference quantizers
// (make_qkx2_quants / make_qx_quants searches) and the exact dequantizers.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "kernels/codecs.h"

namespace plimsoll::kernels {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

// Asymmetric fit of n values to L in [0, nmax]: x ~ scale * L - the_min.
// ggml's make_qkx2_quants (weighted least squares over a few candidate scales).
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad = false) {
  // use_mad: weigh |error| instead of error^2 (Q2_K's reference)
  const auto err = [use_mad](float diff) { return use_mad ? std::fabs(diff) : diff * diff; };
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::memset(L, 0, static_cast<size_t>(n));
    *the_min = -min;
    return 0.f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::clamp(l, 0, nmax));
    const float diff = scale * L[i] + min - x[i];
    best_error += weights[i] * err(diff);
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * static_cast<float>(l);
      sum_l2 += w * static_cast<float>(l * l);
      sum_xl += w * static_cast<float>(l) * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D <= 0) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float cur_error = 0;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * Laux[i] + this_min - x[i];
      cur_error += weights[i] * err(diff);
    }
    if (cur_error < best_error) {
      std::memcpy(L, Laux, static_cast<size_t>(n));
      best_error = cur_error;
      scale = this_scale;
      min = this_min;
    }
  }
  *the_min = -min;
  return scale;
}

// Symmetric fit x ~ scale * (L - nmax), L in [0, 2*nmax): ggml's make_qx_quants
// with rmse_type 1 (weights x^2) and no importance weights.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) { amax = std::fabs(x[i]); max = x[i]; }
  }
  if (amax < kGroupMaxEps) {
    std::memset(L, 0, static_cast<size_t>(n));
    return 0.f;
  }
  auto fit = [&](float iscale, float* sumlx, float* suml2) {
    *sumlx = *suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float w = x[i] * x[i];
      *sumlx += w * x[i] * static_cast<float>(l);
      *suml2 += w * static_cast<float>(l * l);
    }
  };
  auto store = [&](float iscale) {
    for (int i = 0; i < n; ++i) {
      L[i] = static_cast<int8_t>(nmax + std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1));
    }
  };
  float iscale = -static_cast<float>(nmax) / max;
  float sumlx, suml2;
  fit(iscale, &sumlx, &suml2);
  store(iscale);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    fit(iscale, &sumlx, &suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      store(iscale);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Packs 8 six-bit scales and mins into the 12-byte Q4_K/Q5_K layout.
void pack_scale_mins_k4(const uint8_t* ls, const uint8_t* lm, uint8_t* scales) {
  std::memset(scales, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = ls[j];
      scales[j + 4] = lm[j];
    } else {
      scales[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      scales[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
}

// Shared first half of the Q4_K/Q5_K reference quantizers: per-32 scales and
// mins, packed; L receives the final levels in [0, nmax]. Returns nothing.
void quantize_scale_min_k(const float* x, int nmax, float rmin, int nstep, uint16_t* d_out,
                          uint16_t* dmin_out, uint8_t* packed, uint8_t* L) {
  float mins[8], scales[8], weights[32];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin,
                                 0.1f, nstep);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = static_cast<uint8_t>(std::min(63, nearest_int(inv_scale * scales[j])));
    lm[j] = static_cast<uint8_t>(std::min(63, nearest_int(inv_min * mins[j])));
  }
  pack_scale_mins_k4(ls, lm, packed);
  *d_out = f32_to_f16(max_scale / 63.f);
  *dmin_out = f32_to_f16(max_min / 63.f);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    scale_min_k4(j, packed, &sc, &m);
    const float d = f16_to_f32(*d_out) * sc;
    if (d == 0.f) continue;
    const float dm = f16_to_f32(*dmin_out) * m;
    for (int i = 0; i < 32; ++i) {
      L[32 * j + i] = static_cast<uint8_t>(std::clamp(nearest_int((x[32 * j + i] + dm) / d), 0, nmax));
    }
  }
}

}  // namespace

void quantize_q4_k(const float* x, BlockQ4K* y, int64_t n) {
  uint8_t L[kQKK];
  for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    quantize_scale_min_k(x, 15, -1.f, 20, &y[b].d, &y[b].dmin, y[b].scales, L);
    uint8_t* q = y[b].qs;
    for (int j = 0; j < kQKK; j += 64, q += 32) {
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    }
  }
}

void dequantize_q4_k(const BlockQ4K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(x[b].d), min = f16_to_f32(x[b].dmin);
    const uint8_t* q = x[b].qs;
    for (int j = 0; j < 8; j += 2, q += 32) {
      uint8_t sc, m;
      scale_min_k4(j, x[b].scales, &sc, &m);
      const float d1 = d * sc, m1 = min * m;
      scale_min_k4(j + 1, x[b].scales, &sc, &m);
      const float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void quantize_q5_k(const float* x, BlockQ5K* y, int64_t n) {
  uint8_t L[kQKK];
  for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    quantize_scale_min_k(x, 31, -0.5f, 15, &y[b].d, &y[b].dmin, y[b].scales, L);
    uint8_t* qh = y[b].qh;
    uint8_t* ql = y[b].qs;
    std::memset(qh, 0, kQKK / 8);
    uint8_t m1 = 1, m2 = 2;
    for (int g = 0; g < kQKK; g += 64, ql += 32) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[g + j], l2 = L[g + j + 32];
        if (l1 > 15) { l1 -= 16; qh[j] |= m1; }
        if (l2 > 15) { l2 -= 16; qh[j] |= m2; }
        ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
      m1 = static_cast<uint8_t>(m1 << 2);
      m2 = static_cast<uint8_t>(m2 << 2);
    }
  }
}

void dequantize_q5_k(const BlockQ5K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(x[b].d), min = f16_to_f32(x[b].dmin);
    const uint8_t* ql = x[b].qs;
    const uint8_t* qh = x[b].qh;
    unsigned u1 = 1, u2 = 2;
    for (int j = 0; j < 8; j += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
      uint8_t sc, m;
      scale_min_k4(j, x[b].scales, &sc, &m);
      const float d1 = d * sc, m1 = min * m;
      scale_min_k4(j + 1, x[b].scales, &sc, &m);
      const float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * static_cast<float>((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l)
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
    }
  }
}

void quantize_q6_k(const float* x, BlockQ6K* y, int64_t n) {
  int8_t L[kQKK];
  float scales[kQKK / 16];
  for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < kQKK / 16; ++ib) {
      scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
      if (std::fabs(scales[ib]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y[b], 0, sizeof(BlockQ6K));
      continue;
    }
    const float iscale = -128.f / max_scale;
    y[b].d = f32_to_f16(1 / iscale);
    for (int ib = 0; ib < kQKK / 16; ++ib) {
      y[b].scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    }
    for (int j = 0; j < kQKK / 16; ++j) {
      const float d = f16_to_f32(y[b].d) * y[b].scales[j];
      if (d == 0.f) continue;
      for (int i = 0; i < 16; ++i) {
        L[16 * j + i] = static_cast<int8_t>(std::clamp(nearest_int(x[16 * j + i] / d), -32, 31) + 32);
      }
    }
    uint8_t* ql = y[b].ql;
    uint8_t* qh = y[b].qh;
    for (int j = 0; j < kQKK; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
        ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
    }
  }
}

void dequantize_q6_k(const BlockQ6K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(x[b].d);
    const uint8_t* ql = x[b].ql;
    const uint8_t* qh = x[b].qh;
    const int8_t* sc = x[b].scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

// ggml's quantize_row_q2_K_ref: per 16 values an asymmetric 2-bit fit (weights |x|, absolute
// error), the 16 scales and mins as 4-bit multiples of d = max scale / 15 and dmin = max min / 15.
void quantize_q2_k(const float* x, BlockQ2K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    BlockQ2K& out = y[b];
    uint8_t L[kQKK], Laux[16];
    float weights[16], mins[16], scales[16];
    float max_scale = 0.f, max_min = 0.f;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    if (max_scale > 0) {
      const float iscale = 15.f / max_scale;
      for (int j = 0; j < 16; ++j) out.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      out.d = f32_to_f16(max_scale / 15.f);
    } else {
      for (int j = 0; j < 16; ++j) out.scales[j] = 0;
      out.d = f32_to_f16(0.f);
    }
    if (max_min > 0) {
      const float iscale = 15.f / max_min;
      for (int j = 0; j < 16; ++j) out.scales[j] = static_cast<uint8_t>(out.scales[j] | (nearest_int(iscale * mins[j]) << 4));
      out.dmin = f32_to_f16(max_min / 15.f);
    } else {
      out.dmin = f32_to_f16(0.f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(out.d) * static_cast<float>(out.scales[j] & 0xF);
      if (d == 0.f) continue;
      const float dm = f16_to_f32(out.dmin) * static_cast<float>(out.scales[j] >> 4);
      for (int i = 0; i < 16; ++i) L[16 * j + i] = static_cast<uint8_t>(std::clamp(nearest_int((x[16 * j + i] + dm) / d), 0, 3));
    }
    for (int h = 0; h < 2; ++h) {
      const uint8_t* l = L + 128 * h;
      for (int i = 0; i < 32; ++i) {
        out.qs[32 * h + i] = static_cast<uint8_t>(l[i] | (l[i + 32] << 2) | (l[i + 64] << 4) | (l[i + 96] << 6));
      }
    }
  }
}

void dequantize_q2_k(const BlockQ2K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b, y += kQKK) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    for (int e = 0; e < kQKK; ++e) {
      const uint8_t sc = x[b].scales[e / 16];
      y[e] = d * static_cast<float>(sc & 0xF) * static_cast<float>(q2k_value(x[b], e)) - dmin * static_cast<float>(sc >> 4);
    }
  }
}

void quantize_q8_k(const float* x, BlockQ8K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
    float max = 0, amax = 0;
    for (int i = 0; i < kQKK; ++i) {
      if (std::fabs(x[i]) > amax) { amax = std::fabs(x[i]); max = x[i]; }
    }
    if (amax == 0.f) {
      std::memset(&y[b], 0, sizeof(BlockQ8K));
      continue;
    }
    const float iscale = -127.f / max;
    for (int i = 0; i < kQKK; ++i) {
      y[b].qs[i] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[i])));
    }
    for (int g = 0; g < kQKK / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * g + i];
      y[b].bsums[g] = static_cast<int16_t>(sum);
    }
    y[b].d = 1 / iscale;
  }
}

void dequantize_q8_k(const BlockQ8K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b, y += kQKK) {
    for (int i = 0; i < kQKK; ++i) y[i] = x[b].d * static_cast<float>(x[b].qs[i]);
  }
}

}  // namespace plimsoll::kernels
