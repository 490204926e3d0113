// The row kernels and gemvs of Q4_1 / Q5_0 / Q5_1 / IQ4_NL (x Q8_0 activations) and IQ4_XS,
// Q3_K, Q2_K and the grid i-quants IQ2_XXS ... (x Q8_K; random blocks: kernel_test_util.h): each level's own kernels are registered, and on odd shapes (1..4 tokens a pass,
// the gemv's passes of 4 rows and its tails, batches past the row kernels' 4-token tile) every
// path this CPU has matches the scalar twin within the usual f32 bound.
#include <gtest/gtest.h>

#include <vector>

#include "core/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/isa_table.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {
namespace {

using testing::available_isas;
using testing::expect_matches_scalar_twin;
using testing::IsaGuard;
using testing::Shape;

const DType kNewTypes[] = {DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL, DType::kIQ4_XS, DType::kQ3_K,
                           DType::kQ2_K, DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ3_XXS, DType::kIQ1_S, DType::kIQ3_S, DType::kIQ2_S, DType::kIQ1_M};

TEST(MatmulQuantTypes, EachLevelHasItsOwnRowKernelsAndGemv) {
  IsaGuard guard;
  for (DType d : kNewTypes) {
    const int i = static_cast<int>(d);
    ASSERT_NE(scalar_row_kernels().fn[i], nullptr) << dtype_name(d);
    for (Isa isa : available_isas()) {
      if (isa == Isa::kScalar) continue;
      const IsaTable& t = isa_table(isa);
      EXPECT_NE(t.rows->fn[i], scalar_row_kernels().fn[i]) << dtype_name(d) << " " << isa_name(isa);
      const bool x86 = isa == Isa::kAvx2 || isa == Isa::kAvx2Vnni || isa == Isa::kAvx512 || isa == Isa::kAmx;
      if (x86) {
        EXPECT_NE(t.rows->gemv[i], nullptr) << dtype_name(d) << " " << isa_name(isa);
      }
    }
  }
}

TEST(MatmulQuantTypes, OddShapesMatchScalarTwin) {
  IsaGuard guard;
  ThreadPool pool(3);
  const std::vector<Shape> shapes32 = {
      {1, 32, 1}, {2, 64, 2},  {3, 96, 3},   {4, 160, 4},  {5, 256, 5},  {7, 1056, 1},
      {6, 288, 1}, {37, 512, 1}, {9, 4096, 1}, {13, 544, 9}, {17, 32, 17}, {33, 1024, 6},
  };
  const std::vector<Shape> shapes256 = {
      {1, 256, 1}, {2, 512, 2}, {3, 768, 3}, {4, 256, 4}, {5, 1280, 5}, {37, 768, 1}, {6, 2048, 1}, {17, 256, 17},
  };
  uint32_t seed = 21000;
  for (DType dtype : kNewTypes) {
    const bool super = dtype_traits(dtype).block_elems == 256;
    expect_matches_scalar_twin(dtype, super ? shapes256 : shapes32, available_isas(), pool, &seed);
  }
}

}  // namespace
}  // namespace plimsoll::kernels
