// The AVX-512 broadcast panel kernels for float weights (panels_avx512.cpp) and the
// AVX2 ones (panels_avx2.cpp: dot tiles, and outer-product panels from 32 tokens):
// run directly on edge shapes against the scalar twin, and matmul under kAvx512
// at their batch sizes is the kernel itself.
#include <gtest/gtest.h>

#include <vector>

#include "core/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/isa_table.h"

namespace plimsoll::kernels {
namespace {

using testing::expect_matmul_runs_panel_kernel;
using testing::IsaGuard;
using testing::panel_matches_scalar_twin;

const DType kFloatDTypes[] = {DType::kF32, DType::kF16, DType::kBF16};

// Rows around the 16-row panel (its padding rows must not be stored), columns
// around the 16-column chunk (zero padding of weights and activations), token
// counts around the 16-token tile (one and several tiles, a partial last one).
TEST(MatmulPanel, EdgeShapesMatchScalarTwin) {
  IsaGuard guard;
  if (!set_isa(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 here";
  uint32_t seed = 9100;
  for (DType dtype : kFloatDTypes) {
    const PanelKernel& k = avx512_panel_kernels().k[static_cast<int>(dtype)];
    ASSERT_NE(k.rows, nullptr) << dtype_name(dtype);
    for (int64_t rows : {1, 15, 16, 17, 40}) {
      for (int64_t cols : {1, 15, 16, 17, 100, 768}) {
        for (int64_t n_tokens : {1, 10, 16, 17, 40}) {
          ASSERT_TRUE(panel_matches_scalar_twin(k, dtype, rows, cols, n_tokens, &seed))
              << dtype_name(dtype) << " rows " << rows << " cols " << cols << " tokens " << n_tokens;
        }
      }
    }
  }
}

// The AVX2 float panels: rows around the outer tile's 24-row panel and the dot tile's
// triples (padding rows never stored), columns around 8 (the outer panel's column
// tail, the dot tile's zero padding) and at 2048 (a full row block), token counts on
// both sides of the outer tile's 32 and around its 4-token tile and 256 KiB token
// blocks (300 tokens of 257 columns: two blocks).
TEST(MatmulPanel, Avx2FloatEdgeShapesMatchScalarTwin) {
  IsaGuard guard;
  if (!set_isa(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 here";
  uint32_t seed = 9300;
  for (DType dtype : kFloatDTypes) {
    const PanelKernel& k = avx2_panel_kernels().k[static_cast<int>(dtype)];
    ASSERT_NE(k.rows, nullptr) << dtype_name(dtype);
    for (int64_t rows : {5, 24, 25, 50}) {
      for (int64_t cols : {7, 33, 257, 2048}) {
        for (int64_t n_tokens : {4, 31, 32, 45, 300}) {
          if (cols == 2048 && n_tokens == 300) continue;  // the slow scalar twin; 257 columns take two blocks
          ASSERT_TRUE(panel_matches_scalar_twin(k, dtype, rows, cols, n_tokens, &seed))
              << dtype_name(dtype) << " rows " << rows << " cols " << cols << " tokens " << n_tokens;
        }
      }
    }
  }
}

// Under kAvx512, from each dtype's row's min_tokens on, matmul is the panel kernel
// (bit for bit, threaded or not), so the shapes above cover what matmul runs.
TEST(MatmulPanel, MatmulRunsThePanelKernel) {
  IsaGuard guard;
  if (!set_isa(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 here";
  ThreadPool pool(2);
  for (DType dtype : kFloatDTypes) {
    const PanelKernel& k = avx512_panel_kernels().k[static_cast<int>(dtype)];
    const int64_t from = panel_row(isa_table(Isa::kAvx512), k)->tokens.min_tokens;
    for (int64_t n_tokens : {from, from + 19}) {
      expect_matmul_runs_panel_kernel(Isa::kAvx512, k, dtype, 37, 200, n_tokens, pool);
    }
  }
}

}  // namespace
}  // namespace plimsoll::kernels
