// The AArch64 NEON panel kernels (arm/neon_matmul.inc): run directly on edge
// shapes against the scalar twin, plain NEON and SDOT bit for bit, and matmul
// under kNeon / kNeonDot / kNeonI8mm at their batch sizes is the kernel itself. (The row
// kernels, ops and attention are covered by the "every ISA" tests.)
#include <gtest/gtest.h>

#include <vector>

#include "core/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/isa_table.h"

namespace plimsoll::kernels {
namespace {

#if defined(__aarch64__)
using testing::abs_dot;
using testing::expect_matmul_runs_panel_kernel;
using testing::IsaGuard;
using testing::panel_matches_scalar_twin;
using testing::make_weights;
using testing::random_floats;
using testing::run_matmul;
using testing::run_panel_kernel;
using testing::Weights;

const DType kPanelDTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kF32, DType::kF16, DType::kBF16};

// Columns: any count for floats (around the 4-column step and the 8-row panel's
// transposes), 1..9 blocks for Q8_0/Q4_0 (groups of 4 blocks, a partial last one).
std::vector<int64_t> cols_for(DType dtype) {
  if (dtype_traits(dtype).block_elems == 32) return {32, 96, 128, 160, 288};
  return {1, 3, 4, 5, 33, 100};
}

// The panel tables this CPU runs: plain NEON, and the SMMLA one where i8mm is there.
std::vector<const PanelKernels*> panel_tables() {
  std::vector<const PanelKernels*> tables = {&neon_panel_kernels()};
  IsaGuard guard;
  if (set_isa(Isa::kNeonI8mm)) tables.push_back(&neon_i8mm_panel_kernels());
  return tables;
}

// Rows around the 4- and 8-row panels, tokens around the 2-, 4- and 8-token register
// tiles and the 16-token tile (partial tiles, padding rows not stored).
TEST(MatmulNeon, PanelEdgeShapesMatchScalarTwin) {
  IsaGuard guard;
  uint32_t seed = 7100;
  const std::vector<const PanelKernels*> tables = panel_tables();
  for (size_t ti = 0; ti < tables.size(); ++ti) {
    for (DType dtype : kPanelDTypes) {
      const PanelKernel& k = tables[ti]->k[static_cast<int>(dtype)];
      ASSERT_NE(k.rows, nullptr) << dtype_name(dtype);
      for (int64_t rows : {1, 3, 4, 5, 8, 9, 17}) {
        for (int64_t cols : cols_for(dtype)) {
          for (int64_t n_tokens : {1, 2, 3, 5, 8, 9, 16, 17, 33}) {
            ASSERT_TRUE(panel_matches_scalar_twin(k, dtype, rows, cols, n_tokens, &seed))
                << "table " << ti << " " << dtype_name(dtype) << " rows " << rows << " cols " << cols
                << " tokens " << n_tokens;
          }
        }
      }
    }
  }
}

// SDOT and its plain-NEON emulation compute the same integer sums, and the f32
// steps are the same instructions: bit-identical results.
TEST(MatmulNeon, DotprodPanelsEqualPlainNeon) {
  IsaGuard guard;
  if (!set_isa(Isa::kNeonDot)) GTEST_SKIP() << "no dotprod (HWCAP_ASIMDDP)";
  uint32_t seed = 7300;
  for (DType dtype : kPanelDTypes) {
    const int idx = static_cast<int>(dtype);
    const int64_t cols = dtype_traits(dtype).block_elems == 32 ? 288 : 100;
    const Weights w = make_weights(dtype, 13, cols, seed++);
    const std::vector<float> x = random_floats(19 * cols, seed++);
    EXPECT_EQ(run_panel_kernel(neon_dot_panel_kernels().k[idx], w, x, 19),
              run_panel_kernel(neon_panel_kernels().k[idx], w, x, 19))
        << dtype_name(dtype);
  }
}

// Under kNeon / kNeonDot, from each dtype's min_tokens on, matmul is the panel
// kernel (bit for bit, threaded or not), so the shapes above cover what it runs.
TEST(MatmulNeon, MatmulRunsThePanelKernel) {
  IsaGuard guard;
  ThreadPool pool(2);
  for (Isa isa : {Isa::kNeon, Isa::kNeonDot, Isa::kNeonI8mm}) {
    if (!set_isa(isa)) continue;
    const PanelKernels& panels = isa == Isa::kNeon      ? neon_panel_kernels()
                                 : isa == Isa::kNeonDot ? neon_dot_panel_kernels()
                                                        : neon_i8mm_panel_kernels();
    for (DType dtype : kPanelDTypes) {
      const PanelKernel& k = panels.k[static_cast<int>(dtype)];
      const int64_t from = panel_row(isa_table(isa), k)->tokens.min_tokens;
      for (int64_t n_tokens : {from, from + 19}) {
        expect_matmul_runs_panel_kernel(isa, k, dtype, 37, dtype_traits(dtype).block_elems == 32 ? 160 : 200,
                                        n_tokens, pool);
      }
    }
  }
}

// The K-quant and IQ4_XS row kernels (arm/neon_matmul.inc: the scalar twin's integer sums per
// super-block, then its f32 finish), and Q4_1 / Q5_0 / Q5_1 / IQ4_NL's, at 1..4 tokens and 1..5
// super-blocks: against the
// scalar twin within the f32 bound, and plain NEON against SDOT bit for bit.
TEST(MatmulNeon, KQuantRowKernelsMatchScalarTwin) {
  IsaGuard guard;
  const bool has_dot = set_isa(Isa::kNeonDot);
  uint32_t seed = 7500;
  for (DType dtype : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS, DType::kQ3_K, DType::kQ2_K, DType::kQ4_1, DType::kQ5_0,
                      DType::kQ5_1, DType::kIQ4_NL, DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ3_XXS, DType::kIQ1_S, DType::kIQ3_S, DType::kIQ2_S, DType::kIQ1_M}) {
    const int idx = static_cast<int>(dtype);
    ASSERT_NE(neon_row_kernels().fn[idx], scalar_row_kernels().fn[idx]) << dtype_name(dtype);
    for (int64_t cols : {256, 768, 1280}) {
      for (int64_t n_tokens : {1, 2, 3, 4}) {
        const Weights w = make_weights(dtype, 7, cols, seed++);
        const std::vector<float> x = random_floats(n_tokens * cols, seed++);
        const std::vector<float> ref = run_matmul(Isa::kScalar, w, x, n_tokens, nullptr);
        const std::vector<float> y = run_matmul(Isa::kNeon, w, x, n_tokens, nullptr);
        for (int64_t t = 0; t < n_tokens; ++t) {
          for (int64_t r = 0; r < 7; ++r) {
            const size_t i = static_cast<size_t>(t * 7 + r);
            ASSERT_NEAR(y[i], ref[i], 1e-5 * abs_dot(w, x, r, t, cols) + 1e-6)
                << dtype_name(dtype) << " cols " << cols << " tokens " << n_tokens << " t " << t << " r " << r;
          }
        }
        if (has_dot) {
          EXPECT_EQ(run_matmul(Isa::kNeonDot, w, x, n_tokens, nullptr), y) << dtype_name(dtype);
        }
      }
    }
  }
}

// PLIMSOLL_ISA names the ARM levels as isa_name does; a level the CPU lacks is refused.
TEST(MatmulNeon, ArmLevelsAreNamedAndChecked) {
  IsaGuard guard;
  EXPECT_TRUE(set_isa(Isa::kNeon));
  EXPECT_EQ(active_isa(), Isa::kNeon);
  EXPECT_FALSE(set_isa(Isa::kAvx512));
  EXPECT_EQ(active_isa(), Isa::kNeon);
}
#else
TEST(MatmulNeon, RefusedOffAarch64) {
  testing::IsaGuard guard;
  EXPECT_FALSE(set_isa(Isa::kNeon));
  EXPECT_FALSE(set_isa(Isa::kNeonDot));
  EXPECT_STREQ(isa_name(Isa::kNeon), "neon");
}
#endif

}  // namespace
}  // namespace plimsoll::kernels
