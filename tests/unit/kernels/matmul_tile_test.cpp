// matmul tile paths (kRowTile x kTokenTile register tiles, token panels, prepared
// activations): edge shapes against the scalar twin and exact activation quantization.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/thread_pool.h"
#include "kernel_test_util.h"

namespace plimsoll::kernels {
namespace {

using testing::available_isas;
using testing::IsaGuard;
using testing::expect_matches_scalar_twin;
using testing::one_hot_weights;
using testing::run_matmul;
using testing::random_floats;
using testing::Shape;
using testing::Weights;

const DType kTiledDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0};



// Row counts around the 4-row tile, token counts around the 4-token tile and
// the 64-token panel, odd and even block counts; single-threaded and with a
// pool (rows split, big batches quantized in parallel). Same bound as
// Matmul.FastPathsMatchScalarTwin: only the f32 summation order differs.
TEST(MatmulTile, EdgeShapesMatchScalarTwin) {
  IsaGuard guard;
  ThreadPool pool(2);
  uint32_t seed = 7000;
  for (DType dtype : kTiledDTypes) {
    const bool blocked = dtype_traits(dtype).block_elems == 32;
    const std::vector<Shape> shapes = {
        {1, blocked ? 32 : 15, 1},    {2, blocked ? 64 : 16, 2},     {3, blocked ? 96 : 17, 3},
        {6, blocked ? 160 : 31, 7},   {7, blocked ? 224 : 48, 16},   {9, blocked ? 768 : 100, 17},
        {13, blocked ? 1056 : 257, 67}, {8, blocked ? 96 : 33, 130}, {4, blocked ? 2048 : 2049, 5},
        // a prefill-sized batch over wide rows: the AVX2 panels' row blocks (48 rows, a
        // partial one) over token blocks (30 tokens at 2048 columns, a partial one)
        {53, blocked ? 2048 : 2049, 131},
    };
    expect_matches_scalar_twin(dtype, shapes, available_isas(), pool, &seed);
  }
}

// With one-hot weights (row r keeps column r only) each output is a single
// block product d_w * d_x * q_w * q_x: no summation order is involved, so every
// path must agree bit for bit, which pins the activation quantization (ties
// rounded away from zero, f16 scales down to subnormal, all-zero blocks).
TEST(MatmulTile, ActivationQuantizationIsExact) {
  IsaGuard guard;
  const int64_t cols = 96;  // three blocks: an odd count pads the last pair
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0}) {
    const Weights w = one_hot_weights(dtype, cols);
    // token 0: amax 127 (scale 1) and halves, so x / d lands on .5 ties; token 1: tiny values
    // (f16 scale subnormal); token 2: random with the middle block zero.
    std::vector<float> x(static_cast<size_t>(3 * cols), 0.f);
    for (int64_t c = 0; c < cols; ++c) {
      x[static_cast<size_t>(c)] = c % 32 == 0 ? 127.f : (c % 2 ? -1.f : 1.f) * static_cast<float>(c % 32) / 2.f;
      x[static_cast<size_t>(cols + c)] = 1e-7f * static_cast<float>((c * 37) % 23 - 11);
    }
    const std::vector<float> rnd = random_floats(cols, 3);
    for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>(2 * cols + c)] = (c / 32 == 1) ? 0.f : rnd[size_t(c)];
    const std::vector<float> ref = run_matmul(Isa::kScalar, w, x, 3, nullptr);
    for (Isa isa : available_isas()) {
      EXPECT_EQ(run_matmul(isa, w, x, 3, nullptr), ref) << dtype_name(dtype) << " " << isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace plimsoll::kernels
