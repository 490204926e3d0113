// The row kernels and gemvs of Q4_1 / Q5_0 / Q5_1 / IQ4_NL (x Q8_0 activations) and IQ4_XS,
// Q3_K, Q2_K and the grid i-quants IQ2_XXS ... (x Q8_K; random blocks: kernel_test_util.h): each level's own kernels are registered, and on odd shapes (1..4 tokens a pass,
// the gemv's passes of 4 rows and its tails, batches past the row kernels' 4-token tile) every
// path this CPU has matches the scalar twin within the usual f32 bound; the plain AVX2 panels of
// every new type, directly on edge shapes and as what matmul runs.
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
using testing::expect_matmul_runs_panel_kernel;
using testing::IsaGuard;
using testing::panel_matches_scalar_twin;
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

// The plain AVX2 panels (panels_avx2.cpp: Q4_1 / Q5_0 / Q5_1 as Q4_0, IQ4_NL as Q8_0;
// panels_kquants_avx2.cpp: the super-block types) against the scalar twin: rows around the
// 4-row pack (padding rows never stored) and past the 48-row blocks, tokens around the 2-token
// tile and the 16-token tiles, and 130 tokens of 1024 columns (the 32-element types' blocked
// path: activations past 128 KiB). From each type's batch size on, matmul under kAvx2 is the
// panel kernel itself, bit for bit, threaded or not.
TEST(MatmulQuantTypes, Avx2PanelsMatchScalarTwin) {
  IsaGuard guard;
  if (!set_isa(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  ThreadPool pool(2);
  uint32_t seed = 22000;
  for (DType dtype : kNewTypes) {
    const PanelKernel& k = avx2_panel_kernels().k[static_cast<int>(dtype)];
    ASSERT_NE(k.rows, nullptr) << dtype_name(dtype);
    const bool super = dtype_traits(dtype).block_elems == 256;
    for (int64_t rows : {1, 4, 5, 50}) {
      for (int64_t cols : super ? std::vector<int64_t>{256, 1024} : std::vector<int64_t>{32, 288, 1024}) {
        for (int64_t n_tokens : {1, 2, 3, 17, 130}) {
          if (n_tokens == 130 && (rows == 50 || cols != 1024)) continue;  // the slow scalar twin
          ASSERT_TRUE(panel_matches_scalar_twin(k, dtype, rows, cols, n_tokens, &seed))
              << dtype_name(dtype) << " rows " << rows << " cols " << cols << " tokens " << n_tokens;
        }
      }
    }
    const int64_t from = panel_row(isa_table(Isa::kAvx2), k)->tokens.min_tokens;
    for (int64_t n_tokens : {from, from + 19}) {
      expect_matmul_runs_panel_kernel(Isa::kAvx2, k, dtype, 37, super ? 512 : 288, n_tokens, pool);
    }
  }
}

}  // namespace
}  // namespace plimsoll::kernels
