// The 32-element block codecs (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) with ggml's reference
// rounding (quantize_row_*_ref), so our bytes match llama.cpp's for the same input.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

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

namespace {

// A block's min and max (ggml's FLT_MAX / -FLT_MAX start), for Q4_1 / Q5_1.
void block_min_max(const float* x, float* min, float* max) {
  *min = FLT_MAX;
  *max = -FLT_MAX;
  for (int i = 0; i < kQK; ++i) {
    if (x[i] < *min) *min = x[i];
    if (x[i] > *max) *max = x[i];
  }
}

// The signed value of largest magnitude (the first such), for Q5_0 as for Q4_0.
float block_signed_max(const float* x) {
  float amax = 0.f, max = 0.f;
  for (int i = 0; i < kQK; ++i) {
    if (amax < std::fabs(x[i])) { amax = std::fabs(x[i]); max = x[i]; }
  }
  return max;
}

}  // namespace

void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float min, max;
    block_min_max(x, &min, &max);
    const float d = (max - min) / 15.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    y[b].d = f32_to_f16(d);
    y[b].m = f32_to_f16(min);
    for (int i = 0; i < kQK / 2; ++i) {
      const int lo = std::min(15, static_cast<int>(static_cast<int8_t>((x[i] - min) * id + 0.5f)));
      const int hi = std::min(15, static_cast<int>(static_cast<int8_t>((x[i + 16] - min) * id + 0.5f)));
      y[b].qs[i] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
    const float d = f16_to_f32(x[b].d), m = f16_to_f32(x[b].m);
    for (int i = 0; i < kQK / 2; ++i) {
      y[i] = static_cast<float>(x[b].qs[i] & 0xF) * d + m;
      y[i + 16] = static_cast<float>(x[b].qs[i] >> 4) * d + m;
    }
  }
}

void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    const float d = block_signed_max(x) / -16.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    y[b].d = f32_to_f16(d);
    uint32_t qh = 0;
    for (int i = 0; i < kQK / 2; ++i) {
      const int lo = std::min(31, static_cast<int>(static_cast<int8_t>(x[i] * id + 16.5f)));
      const int hi = std::min(31, static_cast<int>(static_cast<int8_t>(x[i + 16] * id + 16.5f)));
      y[b].qs[i] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      qh |= static_cast<uint32_t>((lo >> 4) & 1) << i;
      qh |= static_cast<uint32_t>((hi >> 4) & 1) << (i + 16);
    }
    std::memcpy(y[b].qh, &qh, sizeof(qh));
  }
}

void dequantize_q5_0(const BlockQ5_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
    const float d = f16_to_f32(x[b].d);
    const uint32_t qh = q5_high_bits(x[b].qh);
    for (int i = 0; i < kQK / 2; ++i) {
      const int lo = (x[b].qs[i] & 0xF) | static_cast<int>(((qh >> i) & 1) << 4);
      const int hi = (x[b].qs[i] >> 4) | static_cast<int>(((qh >> (i + 16)) & 1) << 4);
      y[i] = static_cast<float>(lo - 16) * d;
      y[i + 16] = static_cast<float>(hi - 16) * d;
    }
  }
}

void quantize_q5_1(const float* x, BlockQ5_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float min, max;
    block_min_max(x, &min, &max);
    const float d = (max - min) / 31.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    y[b].d = f32_to_f16(d);
    y[b].m = f32_to_f16(min);
    uint32_t qh = 0;
    for (int i = 0; i < kQK / 2; ++i) {  // ggml's reference does not clamp to 31 here
      const int lo = static_cast<uint8_t>((x[i] - min) * id + 0.5f);
      const int hi = static_cast<uint8_t>((x[i + 16] - min) * id + 0.5f);
      y[b].qs[i] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      qh |= static_cast<uint32_t>((lo >> 4) & 1) << i;
      qh |= static_cast<uint32_t>((hi >> 4) & 1) << (i + 16);
    }
    std::memcpy(y[b].qh, &qh, sizeof(qh));
  }
}

void dequantize_q5_1(const BlockQ5_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, y += kQK) {
    const float d = f16_to_f32(x[b].d), m = f16_to_f32(x[b].m);
    const uint32_t qh = q5_high_bits(x[b].qh);
    for (int i = 0; i < kQK / 2; ++i) {
      const int lo = (x[b].qs[i] & 0xF) | static_cast<int>(((qh >> i) & 1) << 4);
      const int hi = (x[b].qs[i] >> 4) | static_cast<int>(((qh >> (i + 16)) & 1) << 4);
      y[i] = static_cast<float>(lo) * d + m;
      y[i + 16] = static_cast<float>(hi) * d + m;
    }
  }
}

}  // namespace plimsoll::kernels
