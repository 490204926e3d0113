// The AMX paths (from their rows' batch sizes, kernel_rows.cpp): INT8 for Q8_0/Q4_0 weights,
// BF16 hi/lo splits for F32/F16/BF16; odd shapes against the scalar twin, and
// matmul under Isa::kAmx runs them.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/isa_table.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {
namespace {

using testing::IsaGuard;
using testing::expect_matmul_runs_panel_kernel;
using testing::expect_matches_scalar_twin;
using testing::make_weights;
using testing::one_hot_weights;
using testing::random_floats;
using testing::run_panel_kernel;
using testing::run_matmul;
using testing::Shape;
using testing::Weights;



TEST(MatmulAmx, SetIsaReportsAmx) {
  IsaGuard guard;
  EXPECT_STREQ(isa_name(Isa::kAmx), "amx");
  if (!set_isa(Isa::kAmx)) GTEST_SKIP() << "no AMX-INT8 here (or no permission for tile data)";
  EXPECT_EQ(active_isa(), Isa::kAmx);
  EXPECT_TRUE(set_isa(Isa::kAvx512));  // AMX implies the AVX-512 path
  EXPECT_EQ(active_isa(), Isa::kAvx512);
}

// Rows around the 16-row panel (partial last panels, fewer rows than a panel),
// tokens around the 16-token tile, odd and even block counts up to 4096
// columns; single-threaded and with a pool. Same bound as the other fast paths.
TEST(MatmulAmx, OddShapesMatchScalarTwin) {
  IsaGuard guard;
  if (!set_isa(Isa::kAmx)) GTEST_SKIP() << "no AMX-INT8 here";
  ThreadPool pool(3);
  const int64_t from = panel_row(active_table(), amx_kernels().k[static_cast<int>(DType::kQ8_0)])->tokens.min_tokens;
  const std::vector<Shape> shapes = {
      {1, 32, from},  {5, 64, 17},    {15, 96, 31},   {16, 160, 16},  {17, 32, 33},
      {31, 1056, 47},          {33, 224, 64},  {48, 768, 65},  {7, 4096, 20},  {40, 4064, 18},
      {100, 2048, 130},        {3, 4000, 16},
  };
  uint32_t seed = 9000;
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0}) expect_matches_scalar_twin(dtype, shapes, {Isa::kAmx}, pool, &seed);
}

// The BF16 path splits weights and activations into hi + lo bf16 parts and
// drops lo * lo: each product within ~2^-16 of the f32 one, so a dot within
// 2^-15 of sum |w * x| (bf16 alone, without the lo parts, is ~2^-9: the bound
// fails if a lo product goes missing). Columns not a multiple of the 32-column
// step are padded with zeros.
TEST(MatmulAmx, FloatWeightsMatchScalarTwin) {
  IsaGuard guard;
  if (!set_isa(Isa::kAmx) || !amx_bf16_usable()) GTEST_SKIP() << "no AMX-BF16 here";
  ThreadPool pool(3);
  const BatchRange r = panel_row(active_table(), amx_bf16_kernels().k[static_cast<int>(DType::kF16)])->tokens;
  const std::vector<Shape> shapes = {
      {1, 32, r.min_tokens}, {5, 17, 33},    {15, 100, 47},  {16, 64, 48},  {17, 33, 33},
      {31, 1056, 47},             {33, 224, 64},  {48, 768, 65},  {7, 2050, 36}, {100, 2048, 130},
      {20, r.wide_cols, r.wide_min_tokens}, {9, r.wide_cols + 32, 17},  // wide rows, short batches
  };
  uint32_t seed = 9500;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    expect_matches_scalar_twin(dtype, shapes, {Isa::kAmx}, pool, &seed);
  }
}

// One-hot weights (row r keeps column r): every output is one block product
// d_w * d_x * q_w * q_x, so AMX must equal the scalar twin bit for bit, which
// pins its activation quantization (ties away from zero, subnormal f16 scales,
// all-zero blocks) and the scale of each (row, token, block).
TEST(MatmulAmx, OneHotWeightsAreExact) {
  IsaGuard guard;
  if (!set_isa(Isa::kAmx)) GTEST_SKIP() << "no AMX-INT8 here";
  const int64_t cols = 96, n_tokens = 19;  // three blocks; a second, partial token tile
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0}) {
    const Weights w = one_hot_weights(dtype, cols);
    std::vector<float> x = random_floats(n_tokens * cols, 3);
    for (int64_t c = 0; c < cols; ++c) {
      x[static_cast<size_t>(c)] = c % 32 == 0 ? 127.f : (c % 2 ? -1.f : 1.f) * static_cast<float>(c % 32) / 2.f;
      x[static_cast<size_t>(cols + c)] = 1e-7f * static_cast<float>((c * 37) % 23 - 11);
      if (c / 32 == 1) x[static_cast<size_t>(17 * cols + c)] = 0.f;
    }
    EXPECT_EQ(run_matmul(Isa::kAmx, w, x, n_tokens, nullptr), run_matmul(Isa::kScalar, w, x, n_tokens, nullptr))
        << dtype_name(dtype);
  }
}

// matmul under kAmx at the kernels' min_tokens+ is the AMX kernel itself (bit
// for bit, threaded or not), for every dtype with one, so the tests above and
// matmul_kquant_test.cpp's exercise it and not a fallback.
TEST(MatmulAmx, MatmulRunsTheAmxKernel) {
  IsaGuard guard;
  if (!set_isa(Isa::kAmx)) GTEST_SKIP() << "no AMX-INT8 here";
  ThreadPool pool(2);
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K, DType::kF32, DType::kF16,
                      DType::kBF16}) {
    const bool float_weights = !dtype_is_quantized(dtype);
    if (float_weights && !amx_bf16_usable()) continue;
    const PanelKernel& k = (float_weights ? amx_bf16_kernels() : amx_kernels()).k[static_cast<int>(dtype)];
    ASSERT_NE(k.rows, nullptr) << dtype_name(dtype);
    expect_matmul_runs_panel_kernel(Isa::kAmx, k, dtype, 37, dtype_traits(dtype).block_elems == 256 ? 768 : 1056, 35,
                                    pool);
  }
}

// Float weights: batches from kPanelTokens tokens up to the AMX-BF16 kernel's
// min_tokens run on AMX-BF16 for rows of its row's wide_cols+ columns, on the AVX-512
// panels for shorter rows; from min_tokens (F32: one past a panel tile) on AMX.
TEST(MatmulAmx, ShortFloatBatchesTakeAmxOnWideRowsOnly) {
  IsaGuard guard;
  if (!set_isa(Isa::kAmx) || !amx_bf16_usable()) GTEST_SKIP() << "no AMX-BF16 here";
  ThreadPool pool(2);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const PanelKernel& amx = amx_bf16_kernels().k[static_cast<int>(dtype)];
    const PanelKernel& panels = avx512_panel_kernels().k[static_cast<int>(dtype)];
    const BatchRange r = panel_row(isa_table(Isa::kAmx), amx)->tokens;
    const int64_t from = r.min_tokens, wide = r.wide_cols, narrow = wide - 32;
    for (int64_t n_tokens : {r.wide_min_tokens, from - 1}) {
      expect_matmul_runs_panel_kernel(Isa::kAmx, amx, dtype, 19, wide, n_tokens, pool);
      expect_matmul_runs_panel_kernel(Isa::kAmx, panels, dtype, 19, narrow, n_tokens, pool);
    }
    expect_matmul_runs_panel_kernel(Isa::kAmx, amx, dtype, 19, narrow, from, pool);
  }
}

}  // namespace
}  // namespace plimsoll::kernels
