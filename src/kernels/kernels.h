// The numeric kernels the model layer calls: matrix products over weights of
// any dtype, and the f32 element-wise ops of a transformer layer. CPU features
// are detected once and a table per ISA level (isa_table.h) picks the fastest path; every fast
// path has a scalar twin (kernels/scalar) that tests compare it against.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "core/tensor.h"

namespace plimsoll {

class ThreadPool;

namespace kernels {

// ---- matrix products -------------------------------------------------------
// y[t, r] = sum_c w[r, c] * x[t, c]
//   w: [rows, cols] of w.dtype (row-major, quantized along cols)
//   x: [n_tokens, cols] f32, y: [n_tokens, rows] f32 (overwritten)
// pool may be null (runs on the calling thread); with a pool, rows are split
// across its threads.
// Quantized weights: each x row is first quantized once per call (Q8_0 for
// Q8_0/Q4_0 weights, Q8_K for K-quants, as llama.cpp's vec_dot does) into a
// thread_local buffer of the calling thread that only grows (no allocation in
// steady state); the dots are then integer sums per block scaled in f32. Every
// ISA path computes the same integer sums; f32 results differ from the scalar
// twin only by summation order (tests bound it by 1e-5 of sum |w*x|).
// F16/BF16 weights are widened exactly to f32 and FMA'd in f32 (no vdpbf16ps).
// cols must be a multiple of w's block size.
void matmul(const TensorView& w, const float* x, int64_t n_tokens, float* y,
            ThreadPool* pool = nullptr);
// Several weights of the same column count against one x (a layer's Q, K and V;
// gate and up): y_i = matmul(*w_i, x). Where their panel kernels prepare the
// activations alike, x is prepared once and one parallel_for runs every weight's
// rows; otherwise each goes through matmul. Same results as matmul, one by one.
struct MatmulOut {
  const TensorView* w;
  float* y;  // [n_tokens, w->rows()]
};
void matmul_same_input(const MatmulOut* outs, int n_outs, const float* x, int64_t n_tokens,
                       ThreadPool* pool = nullptr);
// The most scratch matmul keeps (thread_local buffers that only grow) for
// products of up to n_tokens tokens over rows of up to `cols` columns, with
// n_threads threads, on any ISA path and weight dtype: the bytes a plan counts.
int64_t matmul_scratch_bytes(int64_t cols, int64_t n_tokens, int64_t n_threads);

// ---- rows ------------------------------------------------------------------
// Row `row` of w (any dtype) as n = w.cols() floats (embedding lookup).
void dequantize_row(DType dtype, const void* src, float* dst, int64_t n);
// Quantize n floats into dst (dtype_row_bytes(dtype, n) bytes); n must be a
// multiple of the dtype's block size. All dtypes but the read-only i-quants
// (dtype_is_writable; Q8_K too, for tests). Bytes equal ggml's reference quantizers'
// (quantize_row_*_ref) for the same input.
void quantize_row(DType dtype, const float* src, void* dst, int64_t n);

// ---- f32 element-wise ops ----------------------------------------------------
// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i], i < n (out may alias x)
void rmsnorm(float* out, const float* x, const float* weight, int64_t n, float eps);
// out[i] = (x[i] - mean(x)) / sqrt(var(x) + eps) * weight[i] + bias[i], i < n
// (biased variance, as torch.nn.LayerNorm; bias may be null; out may alias x)
void layernorm(float* out, const float* x, const float* weight, const float* bias, int64_t n,
               float eps);
// In place softmax over x[0..n)
void softmax(float* x, int64_t n);
// sum of exp(x[i] - shift), i < n (shift >= max x keeps every term <= 1): a
// softmax's denominator without writing the probabilities. The AVX-512 path sums
// a polynomial exp (~2 ulp) in double lanes; the scalar twin sums std::exp in double.
double sum_exp(const float* x, int64_t n, float shift);
double sum_exp_scalar(const float* x, int64_t n, float shift);
// Rotary embedding in place on one head vector of head_dim floats at position pos.
//   interleaved: pairs (2i, 2i+1); half_split: pairs (i, i + head_dim/2)
//   frequency of pair i: theta^(-2i/head_dim)
void rope(float* head, int64_t head_dim, int64_t pos, float theta, bool interleaved);
// rope() in two steps, so one position's angles serve every head and layer:
//   cos_sin: [head_dim] = cos of pairs 0..head_dim/2, then their sin
void rope_angles(int64_t head_dim, int64_t pos, float theta, float* cos_sin);
void rope_apply(float* head, int64_t head_dim, const float* cos_sin, bool interleaved);
// out[i] = silu(gate[i]) * up[i]
void swiglu(float* out, const float* gate, const float* up, int64_t n);
// In place x[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): GPT-2's gelu_new,
// BLOOM's bloom_gelu (the tanh approximation)
void gelu_tanh(float* x, int64_t n);
// y[r, i] += bias[i] for r < rows, i < n (y: [rows, n])
void add_bias(float* y, const float* bias, int64_t rows, int64_t n);
// dot product of two f32 vectors
float dot_f32(const float* a, const float* b, int64_t n);
// y[i] += a * x[i]
void axpy_f32(float* y, float a, const float* x, int64_t n);
// dst[i] = src[i] as IEEE half, rounded to nearest even (as f32_to_f16; NaNs
// stay NaN but their payload may differ between the scalar and AVX-512 paths)
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n);

// ---- dispatch --------------------------------------------------------------
enum class Isa { kScalar, kAvx2, kAvx512, kAmx, kNeon, kNeonDot, kAvx2Vnni, kNeonI8mm };
Isa active_isa();                  // what matmul uses now
// "scalar", "avx2", "avx512", "amx", "neon", "neon-dotprod", "avx2-vnni", "neon-i8mm"
const char* isa_name(Isa isa);
// Default: the best the CPU has, or the environment's PLIMSOLL_ISA (an isa_name)
// if the CPU has that (isa_env_status reports any other value as an error). kAvx2 needs
// AVX2+FMA+F16C (quantized and float batches take its panel kernels); kAvx2Vnni also needs
// AVX-VNNI (the same table with vpdpbusd / vpdpwssd in the Q8_0, Q4_0 and K-quant row kernels
// and the Q8_0 / Q4_0 panels; chosen only where AVX-512 is not); kAvx512 also needs AVX-512
// F/BW/VL/VNNI (its broadcast kernels for float batches, its 256-bit VNNI panels for Q8_0 /
// Q4_0 / K-quant batches, zmm tiles below them); kAmx also AMX-TILE/INT8 and the kernel's
// permission for tile data (requested once, on the first check): it is kAvx512 plus AMX-INT8
// for Q8_0/Q4_0/Q4_K/Q6_K batches (and AMX-BF16 for float batches where amx_bf16_usable()).
// On AArch64: kNeon (every AArch64 CPU; Q8_0/Q4_0 and float batches take its panels), kNeonDot
// its SDOT twin where the kernel reports dotprod (HWCAP_ASIMDDP), kNeonI8mm that with SMMLA
// panels for Q8_0/Q4_0 batches where it reports i8mm too (HWCAP2_I8MM). The batch sizes from
// which each kernel runs: each level's kernel rows (kernel_rows.cpp).
// Process-wide (not per thread).
// Forces a path (tests, benchmarks); returns false if the CPU lacks it.
bool set_isa(Isa isa);
// The levels this CPU has, best first (scalar last).
std::vector<Isa> cpu_isas();
// Whether the environment's PLIMSOLL_ISA, if set, names a level this CPU has: else an
// error that names the levels it has (the commands that run a model fail with it; the
// kernels themselves then run the best level).
Status isa_env_status();
// Whether kAmx also runs F32/F16/BF16 weights (AMX-BF16 and AVX512-BF16 here):
// at 32+ tokens they are then multiplied as bf16 hi/lo splits, each dot within
// 2^-15 of sum |w*x| of the f32 result (not f32-exact).
bool amx_bf16_usable();

}  // namespace kernels
}  // namespace plimsoll
