// Q8_0 and Q4_0 row codecs with ggml's reference rounding (quantize_row_q8_0_ref,
// quantize_row_q4_0_ref), so our bytes match llama.cpp's for the same input.
#include <algorithm>
#include <cmath>

#include "core/half.h"
#include "kernels/codecs.h"

namespace plimsoll::kernels {

void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float amax = 0.f;
    for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    y[b].d = f32_to_f16(d);
    for (int i = 0; i < kQK; ++i) y[b].qs[i] = static_cast<int8_t>(std::round(x[i] * id));
  }
}

void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
    const float d = f16_to_f32(x[b].d);
    for (int i = 0; i < kQK; ++i) y[i] = static_cast<float>(x[b].qs[i]) * d;
  }
}

void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float amax = 0.f, max = 0.f;  // max: the signed value of largest magnitude
    for (int i = 0; i < kQK; ++i) {
      if (amax < std::fabs(x[i])) { amax = std::fabs(x[i]); max = x[i]; }
    }
    const float d = max / -8.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    y[b].d = f32_to_f16(d);
    for (int i = 0; i < kQK / 2; ++i) {
      const int lo = std::min(15, static_cast<int>(static_cast<int8_t>(x[i] * id + 8.5f)));
      const int hi = std::min(15, static_cast<int>(static_cast<int8_t>(x[i + 16] * id + 8.5f)));
      y[b].qs[i] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
    const float d = f16_to_f32(x[b].d);
    for (int i = 0; i < kQK / 2; ++i) {
      y[i] = static_cast<float>((x[b].qs[i] & 0xF) - 8) * d;
      y[i + 16] = static_cast<float>((x[b].qs[i] >> 4) - 8) * d;
    }
  }
}

}  // namespace plimsoll::kernels
