// The f32 element-wise ops of a transformer layer (rmsnorm, layernorm, softmax,
// rope, swiglu, gelu, bias, dot, axpy) and f32 -> f16 rows. Scalar loops;
// dot, axpy, swiglu, sum_exp and f16 rows go through the active ISA's table
// (isa_table.h), whose scalar entries are the twins here.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/half.h"
#include "kernels/isa_table.h"
#include "kernels/kernels.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {

namespace {

// The sum of term(i) for i < n in double (n up to ~16k terms without losing digits),
// in 8 interleaved partial sums: one running sum was a chain of dependent adds, ~4
// cycles an element (rmsnorm was 1.2 % of a 1-thread 134M prefill on Zen 4).
template <class Term>
double sum8(int64_t n, Term term) {
  double part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) part[k] += term(i + k);
  }
  for (; i < n; ++i) part[0] += term(i);
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

}  // namespace

void rmsnorm(float* out, const float* x, const float* weight, int64_t n, float eps) {
  const double sum_sq = sum8(n, [x](int64_t i) { return static_cast<double>(x[i]) * x[i]; });
  const float inv_rms =
      static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(n) + static_cast<double>(eps)));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv_rms * weight[i];
}

void layernorm(float* out, const float* x, const float* weight, const float* bias, int64_t n,
               float eps) {
  const double mean = sum8(n, [x](int64_t i) { return static_cast<double>(x[i]); }) / static_cast<double>(n);
  const double sum_sq = sum8(n, [x, mean](int64_t i) { return (x[i] - mean) * (x[i] - mean); });
  const double inv_std = 1.0 / std::sqrt(sum_sq / static_cast<double>(n) + static_cast<double>(eps));
  for (int64_t i = 0; i < n; ++i) {
    const float normed = static_cast<float>((x[i] - mean) * inv_std);
    out[i] = normed * weight[i] + (bias ? bias[i] : 0.0f);
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const float max = *std::max_element(x, x + n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

double sum_exp_scalar(const float* x, int64_t n, float shift) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - shift);
  return sum;
}

double sum_exp(const float* x, int64_t n, float shift) { return active_table().vec.sum_exp(x, n, shift); }

namespace {

// Angle of rotary pair i at pos, in double: pos * freq reaches 1e5 rad, where
// f32 keeps only ~1e-2 rad.
double rope_angle(int64_t i, int64_t head_dim, int64_t pos, float theta) {
  const double freq = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
  return static_cast<double>(pos) * freq;
}

void rotate_pair(float* head, int64_t half, int64_t i, float c, float s, bool interleaved) {
  float* a = interleaved ? head + 2 * i : head + i;
  float* b = interleaved ? head + 2 * i + 1 : head + i + half;
  const float x0 = *a, x1 = *b;
  *a = x0 * c - x1 * s;
  *b = x0 * s + x1 * c;
}

}  // namespace

void rope(float* head, int64_t head_dim, int64_t pos, float theta, bool interleaved) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double angle = rope_angle(i, head_dim, pos, theta);
    rotate_pair(head, half, i, static_cast<float>(std::cos(angle)), static_cast<float>(std::sin(angle)), interleaved);
  }
}

void rope_angles(int64_t head_dim, int64_t pos, float theta, float* cos_sin) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double angle = rope_angle(i, head_dim, pos, theta);
    cos_sin[i] = static_cast<float>(std::cos(angle));
    cos_sin[half + i] = static_cast<float>(std::sin(angle));
  }
}

void rope_apply(float* head, int64_t head_dim, const float* cos_sin, bool interleaved) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) rotate_pair(head, half, i, cos_sin[i], cos_sin[half + i], interleaved);
}

void f32_to_f16_row_scalar(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) { active_table().vec.f32_to_f16_row(src, dst, n); }

void swiglu_scalar(float* out, const float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.f + std::exp(-gate[i])) * up[i];
}

void swiglu(float* out, const float* gate, const float* up, int64_t n) { active_table().vec.swiglu(out, gate, up, n); }

void gelu_tanh(float* x, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
  }
}

void add_bias(float* y, const float* bias, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) y[r * n + i] += bias[i];
  }
}


float dot_f32_scalar(const float* a, const float* b, int64_t n) {
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

float dot_f32(const float* a, const float* b, int64_t n) { return active_table().vec.dot_f32(a, b, n); }

void axpy_f32_scalar(float* y, float a, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void axpy_f32(float* y, float a, const float* x, int64_t n) { active_table().vec.axpy_f32(y, a, x, n); }

}  // namespace plimsoll::kernels
