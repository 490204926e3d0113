// matmul: every ISA path against the scalar twin, every dtype against the f32
// product of its dequantized weights, and threaded against single-threaded.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/thread_pool.h"
#include "kernel_test_util.h"

namespace plimsoll::kernels {
namespace {

using testing::available_isas;
using testing::IsaGuard;
using testing::abs_dot;
using testing::float_bound;
using testing::make_weights;
using testing::run_matmul;
using testing::random_floats;
using testing::Weights;

struct Shape {
  int64_t rows, cols, n_tokens;
};

// Column counts per dtype: any count for floats, multiples of 32 (not always
// of 256) for the 32-element block types, multiples of 256 for K-quants and IQ4_XS.
std::vector<Shape> shapes_for(DType dtype) {
  const int64_t block = dtype_traits(dtype).block_elems;
  std::vector<int64_t> cols;
  if (block == 1) cols = {1, 7, 33, 100, 257, 4096 + 5};
  else if (block == 32) cols = {32, 96, 160, 1056, 4096};
  else cols = {256, 768, 4096};
  std::vector<Shape> shapes;
  const int64_t rows_list[] = {1, 5, 37};
  const int64_t tokens_list[] = {1, 2, 3, 4, 5, 9};
  int i = 0;
  for (int64_t c : cols) {
    for (int64_t r : rows_list) {
      // every (rows, cols) pair with two token counts, rotating through 1..9
      shapes.push_back({r, c, tokens_list[i++ % 6]});
      shapes.push_back({r, c, tokens_list[i++ % 6]});
    }
    // one token over many rows (the gemv kernels: passes of 4 rows and a tail of 1 or 2)
    shapes.push_back({37, c, 1});
    shapes.push_back({6, c, 1});
  }
  return shapes;
}

const DType kAllDTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16,   DType::kQ8_0,   DType::kQ4_0,
                            DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,   DType::kIQ4_NL, DType::kQ4_K,
                            DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS, DType::kQ3_K,   DType::kQ2_K, DType::kQ8_K,
                            DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ3_XXS, DType::kIQ1_S, DType::kIQ3_S, DType::kIQ2_S, DType::kIQ1_M};



// Fast paths against the scalar twin. Both do the same integer block dots
// exactly; they differ only in the order f32 block results are added (lanes,
// then a horizontal sum). Chosen bound: 1e-5 of sum |w*x| (+1e-6 absolute;
// AMX with float weights 2^-15: float_bound);
// the largest observed difference is ~3e-7 of sum |w*x| (f16/f32 with 4101
// columns), integer paths <= 1e-7, and quantization effects are ~1e-3.
TEST(Matmul, FastPathsMatchScalarTwin) {
  IsaGuard guard;
  uint32_t seed = 1;
  for (DType dtype : kAllDTypes) {
    for (const Shape& s : shapes_for(dtype)) {
      const Weights w = make_weights(dtype, s.rows, s.cols, seed++);
      const std::vector<float> x = random_floats(s.n_tokens * s.cols, seed++);
      const std::vector<float> ref = run_matmul(Isa::kScalar, w, x, s.n_tokens);
      for (Isa isa : available_isas()) {
        if (isa == Isa::kScalar) continue;
        const std::vector<float> y = run_matmul(isa, w, x, s.n_tokens);
        for (int64_t t = 0; t < s.n_tokens; ++t) {
          for (int64_t r = 0; r < s.rows; ++r) {
            const size_t i = static_cast<size_t>(t * s.rows + r);
            const double tol = float_bound(isa, dtype) * abs_dot(w, x, r, t, s.cols) + 1e-6;
            ASSERT_NEAR(y[i], ref[i], tol) << dtype_name(dtype) << " " << isa_name(isa) << " rows "
                                           << s.rows << " cols " << s.cols << " tokens "
                                           << s.n_tokens << " t " << t << " r " << r;
          }
        }
      }
    }
  }
}

// Bound on |dot(w, x) - dot(w, x_q)| when x is quantized to 8 bits per block of
// `block` with scale d_b = amax_b / 127: each |x - x_q| <= d_b / 2, plus for
// Q8_0 the f16 rounding of d_b (|q| <= 127, relative error <= 2^-11, so
// <= 127 * d_b * 2^-11 = 0.062 d_b). Factor 0.57 * d_b covers both.
double act_quant_bound(const Weights& w, const std::vector<float>& x, int64_t r, int64_t t,
                       int64_t cols, int64_t block) {
  double bound = 0;
  for (int64_t b0 = 0; b0 < cols; b0 += block) {
    double amax = 0, wsum = 0;
    for (int64_t c = b0; c < b0 + block; ++c) {
      amax = std::max(amax, std::fabs(double(x[t * cols + c])));
      wsum += std::fabs(double(w.dequantized[r * cols + c]));
    }
    bound += 0.57 * (amax / 127.0) * wsum;
  }
  return bound;
}

// Every dtype and ISA against the double-precision product of the dequantized
// weights. Float weights: only f32 rounding (float_bound: 1e-5 of sum |w*x|,
// 2^-15 for AMX's bf16 splits). Quantized
// weights: the activation rounding bound above (Q8_0 activations for
// the 32-element block types, Q8_K for K-quants and IQ4_XS) plus the same float term.
TEST(Matmul, MatchesDequantizedProduct) {
  IsaGuard guard;
  uint32_t seed = 1000;
  for (DType dtype : kAllDTypes) {
    // Q8_0 activations for the 32-element block types, Q8_K for the 256-element ones
    const int64_t w_block = dtype_traits(dtype).block_elems;
    const DType act = w_block == 32 ? DType::kQ8_0 : w_block == 256 ? DType::kQ8_K : DType::kF32;
    const int64_t act_block = dtype_traits(act).block_elems;
    for (const Shape& s : shapes_for(dtype)) {
      const Weights w = make_weights(dtype, s.rows, s.cols, seed++);
      const std::vector<float> x = random_floats(s.n_tokens * s.cols, seed++);
      for (Isa isa : available_isas()) {
        const std::vector<float> y = run_matmul(isa, w, x, s.n_tokens);
        for (int64_t t = 0; t < s.n_tokens; ++t) {
          for (int64_t r = 0; r < s.rows; ++r) {
            double exact = 0;
            for (int64_t c = 0; c < s.cols; ++c) exact += double(w.dequantized[r * s.cols + c]) * x[t * s.cols + c];
            double tol = float_bound(isa, dtype) * abs_dot(w, x, r, t, s.cols) + 1e-6;
            if (act_block > 1) tol += act_quant_bound(w, x, r, t, s.cols, act_block);
            ASSERT_NEAR(y[static_cast<size_t>(t * s.rows + r)], exact, tol)
                << dtype_name(dtype) << " " << isa_name(isa) << " cols " << s.cols << " t " << t
                << " r " << r;
          }
        }
      }
    }
  }
}

// Rows are split between threads; each row is computed by the same code, so the
// result must be bit-identical to the single-threaded one.
TEST(Matmul, ThreadedIsBitIdentical) {
  IsaGuard guard;
  ThreadPool pool(3);
  uint32_t seed = 5000;
  for (DType dtype : kAllDTypes) {
    const int64_t cols = dtype_traits(dtype).block_elems == 256 ? 512 : 96;
    const Weights w = make_weights(dtype, 101, cols, seed++);
    const std::vector<float> x = random_floats(6 * cols, seed++);
    for (Isa isa : available_isas()) {
      const std::vector<float> single = run_matmul(isa, w, x, 6);
      const std::vector<float> threaded = run_matmul(isa, w, x, 6, &pool);
      ASSERT_EQ(single, threaded) << dtype_name(dtype) << " " << isa_name(isa);
    }
  }
}

// Weights sharing one input (Q, K, V; gate and up) through matmul_same_input: x is
// prepared once where their panel kernels prepare alike (Q8_0 x 3; Q4_K with Q6_K, as
// in a Q4_K_M layer) and each goes through matmul otherwise (Q8_0 with F16): every
// output bit-identical to that weight's own matmul, threaded or not, on every ISA.
TEST(Matmul, SameInputMatchesOneByOne) {
  IsaGuard guard;
  ThreadPool pool(2);
  uint32_t seed = 6000;
  const std::vector<std::vector<DType>> sets = {
      {DType::kQ8_0, DType::kQ8_0, DType::kQ8_0}, {DType::kQ4_K, DType::kQ6_K}, {DType::kQ8_0, DType::kF16}};
  for (const std::vector<DType>& set : sets) {
    const int64_t cols = 512, n_tokens = 40;  // 40 tokens: the panel kernels of every level
    const int64_t rows_list[] = {70, 37, 18, 5};
    std::vector<Weights> ws;
    for (size_t i = 0; i < set.size(); ++i) ws.push_back(make_weights(set[i], rows_list[i], cols, seed++));
    const std::vector<float> x = random_floats(n_tokens * cols, seed++);
    for (Isa isa : available_isas()) {
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<std::vector<float>> ys(set.size());
        std::vector<MatmulOut> outs;
        for (size_t i = 0; i < set.size(); ++i) {
          ys[i].assign(static_cast<size_t>(n_tokens * ws[i].view.rows()), -1.0f);
          outs.push_back({&ws[i].view, ys[i].data()});
        }
        ASSERT_TRUE(set_isa(isa));
        matmul_same_input(outs.data(), static_cast<int>(outs.size()), x.data(), n_tokens, p);
        for (size_t i = 0; i < set.size(); ++i) {
          ASSERT_EQ(ys[i], run_matmul(isa, ws[i], x, n_tokens, p))
              << dtype_name(set[i]) << " weight " << i << " " << isa_name(isa) << (p ? " threaded" : "");
        }
      }
    }
  }
}

TEST(Matmul, SetIsaReportsWhatItRuns) {
  IsaGuard guard;
  EXPECT_TRUE(set_isa(Isa::kScalar));
  EXPECT_EQ(active_isa(), Isa::kScalar);
  EXPECT_STREQ(isa_name(Isa::kAvx512), "avx512");
  for (Isa isa : available_isas()) {
    EXPECT_TRUE(set_isa(isa));
    EXPECT_EQ(active_isa(), isa);
  }
}

}  // namespace
}  // namespace plimsoll::kernels
