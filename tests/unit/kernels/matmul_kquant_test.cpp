// The K-quant fast paths (Q4_K / Q6_K weights x Q8_K activations: the AVX-512
// tiles, and AMX from its rows' batch sizes where present; Q4_K / Q5_K / Q6_K: the
// AVX2 panels, and the same built with VNNI that the AVX-512 table runs): odd shapes against the
// scalar twin on every path this CPU has, and exact activation quantization.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {
namespace {

using testing::available_isas;
using testing::expect_matches_scalar_twin;
using testing::IsaGuard;
using testing::one_hot_weights;
using testing::random_floats;
using testing::run_matmul;
using testing::Shape;
using testing::Weights;

const DType kKQuants[] = {DType::kQ4_K, DType::kQ6_K};

TEST(MatmulKQuant, AvxTilesAreRegistered) {
  IsaGuard guard;
  if (!set_isa(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 here";
  for (DType dtype : kKQuants) {
    const TileKernel& k = avx512_tile_kernels().k[static_cast<int>(dtype)];
    EXPECT_NE(k.tile, nullptr) << dtype_name(dtype);
    EXPECT_NE(k.prepare, nullptr) << dtype_name(dtype);
  }
}

// Rows around the 4-row tile and the 16-row AMX panel, tokens around the
// 4-token tile, the AMX 16-token tile and the 64-token panel, 1..8 super-blocks;
// single-threaded and with a pool. The integer sums are exact on every path, so
// only the f32 scaling and summation order differ: the usual bound.
TEST(MatmulKQuant, OddShapesMatchScalarTwin) {
  IsaGuard guard;
  ThreadPool pool(3);
  const std::vector<Shape> shapes = {
      {1, 256, 1},    {2, 512, 2},    {3, 768, 3},    {4, 256, 4},     {5, 1280, 5},  {7, 2048, 7},
      {9, 768, 8},    {13, 512, 16},  {17, 256, 17},  {33, 1024, 31},  {16, 768, 67}, {6, 256, 130},
  };
  uint32_t seed = 11000;
  for (DType dtype : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    expect_matches_scalar_twin(dtype, shapes, available_isas(), pool, &seed);
  }
}

// Q4_K one-hot weights (row r keeps column r; its sub-block's min is 0): each
// output is one product d_w * d_x * sc * q_w * q_x, so every path must equal the
// scalar twin bit for bit, which pins the Q8_K quantization of the activations
// (the scale from the first largest |x|, ties to even, all-zero super-blocks).
TEST(MatmulKQuant, OneHotWeightsAreExact) {
  IsaGuard guard;
  const int64_t cols = 512, n_tokens = 19;  // two super-blocks; 19 tokens: AMX's partial tile
  const Weights w = one_hot_weights(DType::kQ4_K, cols);
  std::vector<float> x = random_floats(n_tokens * cols, 3);
  for (int64_t c = 0; c < cols; ++c) {
    const auto i = static_cast<size_t>(c);
    // token 0: max 127 (iscale -1), the rest halves: ties; token 1: tiny values;
    // token 2: -127 before 127 (the first largest sets the sign); token 17: second super-block zero
    x[i] = c % 256 == 5 ? 127.f : (c % 2 ? -1.f : 1.f) * static_cast<float>(c % 254) / 2.f;
    x[static_cast<size_t>(cols) + i] = 1e-7f * static_cast<float>((c * 37) % 23 - 11);
    x[static_cast<size_t>(2 * cols) + i] = c % 256 == 3 ? -127.f : c % 256 == 9 ? 127.f : static_cast<float>(c % 7);
    if (c >= 256) x[static_cast<size_t>(17 * cols) + i] = 0.f;
  }
  const std::vector<float> ref = run_matmul(Isa::kScalar, w, x, n_tokens, nullptr);
  for (Isa isa : available_isas()) {
    const std::vector<float> y = run_matmul(isa, w, x, n_tokens, nullptr);
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_EQ(y[i], ref[i]) << isa_name(isa) << " token " << i / cols << " row " << i % cols;
    }
  }
}

}  // namespace
}  // namespace plimsoll::kernels
