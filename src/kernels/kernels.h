// The numeric kernels the model layer calls: matrix products over weights of
// any dtype, and the f32 element-wise ops of a transformer layer. CPU features
// are detected once and a function table picks the fastest path; every fast
// path has a scalar twin (kernels/scalar) that tests compare it against.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"

namespace plimsoll {

class ThreadPool;

namespace kernels {

// ---- matrix products -------------------------------------------------------
// y[t, r] = sum_c w[r, c] * x[t, c]
//   w: [rows, cols] of w.dtype (row-major, quantized along cols)
//   x: [n_tokens, cols] f32, y: [n_tokens, rows] f32 (overwritten)
// pool may be null (runs on the calling thread).
void matmul(const TensorView& w, const float* x, int64_t n_tokens, float* y,
            ThreadPool* pool = nullptr);

// ---- rows ------------------------------------------------------------------
// Row `row` of w (any dtype) as n = w.cols() floats (embedding lookup).
void dequantize_row(DType dtype, const void* src, float* dst, int64_t n);
// Quantize n floats into dst (dtype_row_bytes(dtype, n) bytes); n must be a
// multiple of the dtype's block size. All dtypes but Q8_K.
void quantize_row(DType dtype, const float* src, void* dst, int64_t n);

// ---- f32 element-wise ops ----------------------------------------------------
// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i], i < n (out may alias x)
void rmsnorm(float* out, const float* x, const float* weight, int64_t n, float eps);
// In place softmax over x[0..n)
void softmax(float* x, int64_t n);
// Rotary embedding in place on one head vector of head_dim floats at position pos.
//   interleaved: pairs (2i, 2i+1); half_split: pairs (i, i + head_dim/2)
//   frequency of pair i: theta^(-2i/head_dim)
void rope(float* head, int64_t head_dim, int64_t pos, float theta, bool interleaved);
// out[i] = silu(gate[i]) * up[i]
void swiglu(float* out, const float* gate, const float* up, int64_t n);
// dot product of two f32 vectors
float dot_f32(const float* a, const float* b, int64_t n);
// y[i] += a * x[i]
void axpy_f32(float* y, float a, const float* x, int64_t n);

// ---- dispatch --------------------------------------------------------------
enum class Isa { kScalar, kAvx2, kAvx512 };
Isa active_isa();                  // what matmul uses now
const char* isa_name(Isa isa);
// Forces a path (tests, benchmarks); returns false if the CPU lacks it.
bool set_isa(Isa isa);

}  // namespace kernels
}  // namespace plimsoll
