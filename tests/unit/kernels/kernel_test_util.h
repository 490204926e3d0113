// Helpers shared by the kernels tests: deterministic random data, quantized
// weight matrices, and the list of ISA paths this CPU can run.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/half.h"
#include "core/tensor.h"
#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels::testing {

inline std::vector<float> random_floats(int64_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = dist(rng);
  return v;
}

// n_blocks random blocks of a read-only dtype (the grid i-quants: no quantizer): every byte
// random (every grid index, sign, delta and 3- or 4-bit scale pattern is valid), then an f16
// super-scale of either sign, |d| in [0.002, 0.02): ggml's d, or for IQ1_M the top nibbles of
// its 4 scale words.
inline void random_read_only_blocks(DType dtype, std::byte* p, int64_t n_blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t bb = dtype_traits(dtype).block_bytes;
  for (int64_t b = 0; b < n_blocks; ++b, p += bb) {
    for (int64_t i = 0; i < bb; ++i) p[i] = std::byte(rng() & 0xFF);
    const float d = (0.002f + 0.018f * float(rng() % 1000) / 1000.f) * (rng() % 2 ? -1.f : 1.f);
    const uint16_t h = f32_to_f16(d);
    if (dtype == DType::kIQ1_M) {
      uint16_t sc[4];
      std::memcpy(sc, p + bb - 8, sizeof(sc));
      for (int k = 0; k < 4; ++k) sc[k] = uint16_t((sc[k] & 0x0FFF) | (((h >> (4 * k)) & 0xF) << 12));
      std::memcpy(p + bb - 8, sc, sizeof(sc));
    } else {
      std::memcpy(p, &h, sizeof(h));
    }
  }
}

// A [rows, cols] weight matrix of `dtype` quantized from random floats (read-only dtypes:
// random blocks, random_read_only_blocks).
struct Weights {
  std::vector<std::byte> bytes;
  TensorView view;
  std::vector<float> dequantized;  // [rows, cols] what the bytes mean
};

inline Weights make_weights(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
  Weights w;
  const std::vector<float> src = random_floats(rows * cols, seed, 0.5f);
  const int64_t row_bytes = dtype_row_bytes(dtype, cols);
  w.bytes.resize(static_cast<size_t>(rows * row_bytes));
  w.dequantized.resize(static_cast<size_t>(rows * cols));
  const bool writable = dtype_is_writable(dtype) || dtype == DType::kQ8_K;
  if (!writable) random_read_only_blocks(dtype, w.bytes.data(), rows * cols / dtype_traits(dtype).block_elems, seed);
  for (int64_t r = 0; r < rows; ++r) {
    if (writable) quantize_row(dtype, src.data() + r * cols, w.bytes.data() + r * row_bytes, cols);
    dequantize_row(dtype, w.bytes.data() + r * row_bytes, w.dequantized.data() + r * cols, cols);
  }
  w.view.dtype = dtype;
  w.view.shape = {rows, cols};
  w.view.data = w.bytes.data();
  w.view.n_bytes = static_cast<int64_t>(w.bytes.size());
  return w;
}

inline std::vector<Isa> available_isas() {
  std::vector<Isa> isas = cpu_isas();  // best first
  std::reverse(isas.begin(), isas.end());
  return isas;
}

// Restores the ISA a test changed.
class IsaGuard {
 public:
  IsaGuard() : saved_(active_isa()) {}
  ~IsaGuard() { set_isa(saved_); }
  IsaGuard(const IsaGuard&) = delete;
  IsaGuard& operator=(const IsaGuard&) = delete;

 private:
  Isa saved_;
};

// y = matmul(w, x) on `isa` (checked available), y prefilled with -1.
inline std::vector<float> run_matmul(Isa isa, const Weights& w, const std::vector<float>& x, int64_t n_tokens,
                                     ThreadPool* pool = nullptr) {
  EXPECT_TRUE(set_isa(isa));
  std::vector<float> y(static_cast<size_t>(n_tokens * w.view.rows()), -1.f);
  matmul(w.view, x.data(), n_tokens, y.data(), pool);
  return y;
}

// The relative bound (of sum |w*x|) a fast path's float arithmetic is held to:
// f32 rounding, 1e-5, except AMX with float weights (bf16 hi/lo splits, see
// tiles_amx_bf16.cpp), 2^-15. Integer paths are exact before their f32 scaling.
inline double float_bound(Isa isa, DType dtype) {
  const bool float_weights = dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
  return isa == Isa::kAmx && float_weights && amx_bf16_usable() ? std::ldexp(1.0, -15) : 1e-5;
}

// sum_c |w[r,c] * x[t,c]|: the scale float rounding errors are measured against.
inline double abs_dot(const Weights& w, const std::vector<float>& x, int64_t r, int64_t t, int64_t cols) {
  double s = 0;
  for (int64_t c = 0; c < cols; ++c) s += std::fabs(double(w.dequantized[r * cols + c]) * x[t * cols + c]);
  return s;
}

// A square [cols, cols] matrix of `dtype` whose row r keeps column r (1.0): each
// output is then one product, with no summation order involved.
inline Weights one_hot_weights(DType dtype, int64_t cols) {
  std::vector<float> one_hot(static_cast<size_t>(cols * cols), 0.f);
  for (int64_t r = 0; r < cols; ++r) one_hot[static_cast<size_t>(r * cols + r)] = 1.f;
  Weights w = make_weights(dtype, cols, cols, 1);
  const int64_t row_bytes = dtype_row_bytes(dtype, cols);
  for (int64_t r = 0; r < cols; ++r) {
    quantize_row(dtype, one_hot.data() + r * cols, w.bytes.data() + r * row_bytes, cols);
    dequantize_row(dtype, w.bytes.data() + r * row_bytes, w.dequantized.data() + r * cols, cols);
  }
  return w;
}

struct Shape {
  int64_t rows, cols, n_tokens;
};

// Random weights of `dtype` and activations for each shape, matmul on each of
// `isas`, single-threaded and on `pool`, against the scalar twin: every output
// within float_bound(isa, dtype) of sum |w*x| (+1e-6). *seed advances.
inline void expect_matches_scalar_twin(DType dtype, const std::vector<Shape>& shapes, const std::vector<Isa>& isas,
                                       ThreadPool& pool, uint32_t* seed) {
  for (const Shape& s : shapes) {
    const Weights w = make_weights(dtype, s.rows, s.cols, (*seed)++);
    const std::vector<float> x = random_floats(s.n_tokens * s.cols, (*seed)++);
    const std::vector<float> ref = run_matmul(Isa::kScalar, w, x, s.n_tokens, nullptr);
    for (Isa isa : isas) {
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        const std::vector<float> y = run_matmul(isa, w, x, s.n_tokens, p);
        for (int64_t t = 0; t < s.n_tokens; ++t) {
          for (int64_t r = 0; r < s.rows; ++r) {
            const size_t i = static_cast<size_t>(t * s.rows + r);
            ASSERT_NEAR(y[i], ref[i], float_bound(isa, dtype) * abs_dot(w, x, r, t, s.cols) + 1e-6)
                << dtype_name(dtype) << " " << isa_name(isa) << (p ? " pool" : "") << " rows " << s.rows
                << " cols " << s.cols << " tokens " << s.n_tokens << " t " << t << " r " << r;
          }
        }
      }
    }
  }
}

// The panel kernel k (AMX, AVX-512, AVX2 or NEON) run directly (activations prepared into an aligned buffer,
// then all rows), for comparing with what matmul does.
inline std::vector<float> run_panel_kernel(const PanelKernel& k, const Weights& w, const std::vector<float>& x,
                                         int64_t n_tokens) {
  const int64_t rows = w.view.rows(), cols = w.view.cols();
  std::vector<std::byte> acts(static_cast<size_t>(k.act_bytes(n_tokens, cols) + 64));
  std::byte* aligned = acts.data() + (64 - reinterpret_cast<uintptr_t>(acts.data()) % 64) % 64;
  k.prepare(x.data(), n_tokens, cols, 0, (n_tokens + kPanelTokens - 1) / kPanelTokens, aligned);
  std::vector<float> y(static_cast<size_t>(n_tokens * rows), -1.f);
  k.rows(w.view.data, w.view.row_bytes(), rows, aligned, n_tokens, cols, y.data(), rows);
  return y;
}

// The panel kernel k run directly on fresh weights (dtype, rows x cols) and activations
// (n_tokens) against the scalar twin: every output within 1e-5 of sum |w*x| (+1e-6).
// *seed advances; the first mismatch names its token and row.
inline ::testing::AssertionResult panel_matches_scalar_twin(const PanelKernel& k, DType dtype, int64_t rows,
                                                            int64_t cols, int64_t n_tokens, uint32_t* seed) {
  const Weights w = make_weights(dtype, rows, cols, (*seed)++);
  const std::vector<float> x = random_floats(n_tokens * cols, (*seed)++);
  const std::vector<float> ref = run_matmul(Isa::kScalar, w, x, n_tokens, nullptr);
  const std::vector<float> y = run_panel_kernel(k, w, x, n_tokens);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      const size_t i = static_cast<size_t>(t * rows + r);
      if (std::fabs(double(y[i]) - ref[i]) > 1e-5 * abs_dot(w, x, r, t, cols) + 1e-6) {
        return ::testing::AssertionFailure() << "t " << t << " r " << r << ": " << y[i] << " against " << ref[i];
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// matmul under `isa` at n_tokens is the panel kernel k itself: bit for bit,
// single-threaded and with the pool.
inline void expect_matmul_runs_panel_kernel(Isa isa, const PanelKernel& k, DType dtype, int64_t rows, int64_t cols,
                                            int64_t n_tokens, ThreadPool& pool) {
  const Weights w = make_weights(dtype, rows, cols, 11);
  const std::vector<float> x = random_floats(n_tokens * cols, 12);
  const std::vector<float> direct = run_panel_kernel(k, w, x, n_tokens);
  EXPECT_EQ(run_matmul(isa, w, x, n_tokens, nullptr), direct) << dtype_name(dtype) << " tokens " << n_tokens;
  EXPECT_EQ(run_matmul(isa, w, x, n_tokens, &pool), direct) << dtype_name(dtype) << " tokens " << n_tokens;
}

}  // namespace plimsoll::kernels::testing
