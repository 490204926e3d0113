// The ISA tables (kernels/isa_table.h): each level's entries are its own kernels,
// so the "on every ISA" tests elsewhere really run them against the scalar twins.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/isa_table.h"
#include "kernels/scratch.h"

namespace plimsoll::kernels {
namespace {

// Every entry of a table's VecKernels is the level's (none is the scalar twin's).
#define EXPECT_VEC_KERNELS(got, want)                          \
  do {                                                         \
    EXPECT_EQ((got).dot_f32, (want).dot_f32);                  \
    EXPECT_EQ((got).axpy_f32, (want).axpy_f32);                \
    EXPECT_EQ((got).swiglu, (want).swiglu);                    \
    EXPECT_EQ((got).sum_exp, (want).sum_exp);                  \
    EXPECT_EQ((got).f32_to_f16_row, (want).f32_to_f16_row);    \
    EXPECT_EQ((got).attend, (want).attend);                    \
    EXPECT_EQ((got).attend_causal, (want).attend_causal);      \
    EXPECT_NE((got).dot_f32, dot_f32_scalar);                  \
    EXPECT_NE((got).attend, attend_scalar);                    \
  } while (0)

// PLIMSOLL_ISA: unset or a level this CPU has is fine; any other value is an error that
// names it and the levels this CPU has (serve and generate fail with it).
TEST(IsaTable, PlimsollIsaNotOnThisCpuIsAnErrorNamingItsLevels) {
  const char* was = std::getenv("PLIMSOLL_ISA");
  const std::string saved = was != nullptr ? was : "";
  unsetenv("PLIMSOLL_ISA");
  EXPECT_TRUE(isa_env_status().ok());
  setenv("PLIMSOLL_ISA", "scalar", 1);
  EXPECT_TRUE(isa_env_status().ok());
  setenv("PLIMSOLL_ISA", isa_name(cpu_isas().front()), 1);
  EXPECT_TRUE(isa_env_status().ok());
  for (const char* bad : {"avx9000", "AVX2", ""}) {
    setenv("PLIMSOLL_ISA", bad, 1);
    const Status st = isa_env_status();
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
    const std::string& m = st.error().message;
    EXPECT_NE(m.find(std::string("PLIMSOLL_ISA=") + bad + ":"), std::string::npos) << m;
    for (Isa isa : cpu_isas()) EXPECT_NE(m.find(isa_name(isa)), std::string::npos) << m;
  }
  const std::vector<Isa> have = cpu_isas();
  for (Isa isa : {Isa::kAvx2, Isa::kAmx, Isa::kNeon}) {  // a real level this CPU may lack
    if (std::find(have.begin(), have.end(), isa) != have.end()) continue;
    setenv("PLIMSOLL_ISA", isa_name(isa), 1);
    const Status st = isa_env_status();
    ASSERT_FALSE(st.ok()) << isa_name(isa);
    EXPECT_NE(st.error().message.find("lacks"), std::string::npos) << st.error().message;
  }
  if (was != nullptr) {
    setenv("PLIMSOLL_ISA", saved.c_str(), 1);
  } else {
    unsetenv("PLIMSOLL_ISA");
  }
}

TEST(IsaTable, CpuIsasAreBestFirstAndEndInScalar) {
  testing::IsaGuard guard;
  const std::vector<Isa> isas = cpu_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.back(), Isa::kScalar);
  for (Isa isa : isas) EXPECT_TRUE(set_isa(isa)) << isa_name(isa);
}

// The first token count of the table's row that runs set k's kernel for dtype d (-1: no such row).
int64_t panel_from(const IsaTable& t, const PanelKernels& k, DType d) {
  const KernelRow* r = panel_row(t, k.k[static_cast<int>(d)]);
  return r != nullptr ? r->tokens.min_tokens : -1;
}
int64_t tile_from(const IsaTable& t, const TileKernels& k, DType d) {
  for (const KernelRow& r : t.kernel_rows) {
    if (r.tile == &k.k[static_cast<int>(d)]) return r.tokens.min_tokens;
  }
  return -1;
}
bool has_tiles(const IsaTable& t) {
  return std::any_of(t.kernel_rows.begin(), t.kernel_rows.end(), [](const KernelRow& r) { return r.tile != nullptr; });
}

TEST(IsaTable, ScalarTableHoldsTheTwins) {
  const IsaTable& t = isa_table(Isa::kScalar);
  EXPECT_EQ(t.rows, &scalar_row_kernels());
  for (const KernelRow& r : t.kernel_rows) EXPECT_EQ(r.panel == nullptr && r.tile == nullptr, true);
  EXPECT_EQ(t.vec.dot_f32, dot_f32_scalar);
  EXPECT_EQ(t.vec.axpy_f32, axpy_f32_scalar);
  EXPECT_EQ(t.vec.swiglu, swiglu_scalar);
  EXPECT_EQ(t.vec.sum_exp, sum_exp_scalar);
  EXPECT_EQ(t.vec.f32_to_f16_row, f32_to_f16_row_scalar);
  EXPECT_EQ(t.vec.attend, attend_scalar);
  EXPECT_EQ(t.vec.attend_causal, attend_causal_scalar);
}

#if defined(__x86_64__) || defined(__i386__)
// AVX2 (forced on a CPU that has more): its own panels for Q8_0/Q4_0, K-quant, the other
// GGUF quantizations' and float weights, ops and attention.
TEST(IsaTable, Avx2TableHoldsTheAvx2Kernels) {
  testing::IsaGuard guard;
  if (!set_isa(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 + FMA + F16C";
  const IsaTable& t = active_table();
  EXPECT_EQ(&t, &isa_table(Isa::kAvx2));
  EXPECT_EQ(t.rows, &avx2_row_kernels());
  EXPECT_FALSE(has_tiles(t));
  const PanelKernels& p = avx2_panel_kernels();
  for (DType d : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    EXPECT_NE(p.k[static_cast<int>(d)].rows, nullptr) << dtype_name(d);
  }
  // from the batch sizes where the panels beat the row kernels (their packing paid for)
  EXPECT_EQ(panel_from(t, p, DType::kQ4_0), 2);
  EXPECT_EQ(panel_from(t, p, DType::kQ8_0), 8);
  for (DType d : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kQ2_K, DType::kQ3_K, DType::kIQ4_XS,
                  DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ3_XXS, DType::kIQ3_S, DType::kIQ1_S,
                  DType::kIQ1_M}) {
    EXPECT_EQ(panel_from(t, p, d), 4) << dtype_name(d);
  }
  for (DType d : {DType::kQ4_1, DType::kQ5_0, DType::kQ5_1}) EXPECT_EQ(panel_from(t, p, d), 2) << dtype_name(d);
  EXPECT_EQ(panel_from(t, p, DType::kIQ4_NL), 8);
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) {
    EXPECT_NE(p.k[static_cast<int>(d)].rows, nullptr) << dtype_name(d);
    EXPECT_EQ(panel_from(t, p, d), 4) << dtype_name(d);
  }
  EXPECT_VEC_KERNELS(t.vec, avx2_vec_kernels());
}

// AVX2 + AVX-VNNI: the AVX2 table with its own row kernels and Q8_0 / Q4_0 / K-quant panels
// (the float panels and the other quantized types' panels, ops and attention are AVX2's).
TEST(IsaTable, Avx2VnniTableSwapsInTheVnniDots) {
  testing::IsaGuard guard;
  EXPECT_STREQ(isa_name(Isa::kAvx2Vnni), "avx2-vnni");
  if (!set_isa(Isa::kAvx2Vnni)) GTEST_SKIP() << "no AVX-VNNI";
  const IsaTable& t = active_table();
  const PanelKernels& avx2 = avx2_panel_kernels();
  const PanelKernels& p = avx2_vnni_panel_kernels();
  EXPECT_EQ(t.rows, &avx2_vnni_row_kernels());
  for (DType d : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    EXPECT_NE(p.k[static_cast<int>(d)].rows, avx2.k[static_cast<int>(d)].rows) << dtype_name(d);
    EXPECT_EQ(panel_from(t, p, d), 2) << dtype_name(d);  // bytes as they are
  }
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) {
    EXPECT_EQ(p.k[static_cast<int>(d)].rows, avx2.k[static_cast<int>(d)].rows) << dtype_name(d);
    EXPECT_EQ(panel_from(t, p, d), 4) << dtype_name(d);
  }
  // the other quantized types: AVX2's panels at AVX2's batch sizes
  for (DType d : {DType::kQ4_1, DType::kQ5_0, DType::kIQ4_NL, DType::kQ3_K, DType::kIQ4_XS, DType::kIQ2_XXS}) {
    EXPECT_EQ(p.k[static_cast<int>(d)].rows, avx2.k[static_cast<int>(d)].rows) << dtype_name(d);
    EXPECT_EQ(panel_from(t, p, d), panel_from(isa_table(Isa::kAvx2), avx2, d)) << dtype_name(d);
  }
  EXPECT_VEC_KERNELS(t.vec, avx2_vec_kernels());
}

TEST(IsaTable, Avx512TableKeepsItsTilesAndPanels) {
  testing::IsaGuard guard;
  if (!set_isa(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
  const IsaTable& t = active_table();
  const PanelKernels& ymm = avx512_ymm_panel_kernels();
  EXPECT_EQ(t.rows, &avx512_row_kernels());
  EXPECT_EQ(panel_from(t, avx512_panel_kernels(), DType::kF32), 10);
  EXPECT_EQ(panel_from(t, avx512_panel_kernels(), DType::kBF16), 16);
  EXPECT_EQ(panel_from(t, ymm, DType::kQ8_0), 12);
  EXPECT_EQ(panel_from(t, ymm, DType::kQ4_0), 8);
  // K-quants: the 256-bit VNNI panels from their batch sizes, the zmm tiles below them
  EXPECT_EQ(panel_from(t, ymm, DType::kQ4_K), 8);
  EXPECT_EQ(panel_from(t, ymm, DType::kQ5_K), 2);
  EXPECT_EQ(panel_from(t, ymm, DType::kQ6_K), 16);
  EXPECT_NE(ymm.k[static_cast<int>(DType::kQ6_K)].rows, avx2_panel_kernels().k[static_cast<int>(DType::kQ6_K)].rows);
  EXPECT_EQ(ymm.k[static_cast<int>(DType::kF16)].rows, nullptr);  // floats: the broadcast panels
  // one token: the 256-bit gemv for Q8_0 / Q4_0 and the K-quants, ahead of the zmm tiles
  for (DType d : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    EXPECT_NE(t.rows->gemv[static_cast<int>(d)], nullptr) << dtype_name(d);
  }
  // 1-2 tokens of the floats and two of Q8_0 take the row kernels, not the zmm tiles
  for (DType d : {DType::kQ8_0, DType::kF32, DType::kF16, DType::kBF16}) {
    EXPECT_EQ(tile_from(t, avx512_tile_kernels(), d), 3) << dtype_name(d);
  }
  EXPECT_EQ(tile_from(t, avx512_tile_kernels(), DType::kQ4_0), 1);
  // the AMX table's rows and tiles: the same, but one K-quant token and 1-2 float or Q8_0
  // tokens stay on the zmm tiles
  if (set_isa(Isa::kAmx)) {
    for (DType d : {DType::kQ8_0, DType::kF16}) EXPECT_EQ(tile_from(active_table(), amx_tile_kernels(), d), 1);
  }
  const RowKernels& amx_rows = amx_row_kernels();
  for (DType d : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) EXPECT_EQ(amx_rows.gemv[static_cast<int>(d)], nullptr);
  EXPECT_EQ(amx_rows.gemv[static_cast<int>(DType::kQ8_0)], t.rows->gemv[static_cast<int>(DType::kQ8_0)]);
  EXPECT_EQ(amx_rows.fn[static_cast<int>(DType::kQ4_K)], t.rows->fn[static_cast<int>(DType::kQ4_K)]);
  EXPECT_VEC_KERNELS(t.vec, avx512_vec_kernels());
  EXPECT_EQ(t.vec.attend, avx512_attend);
}
#endif

#if defined(__aarch64__)
// NEON: every AArch64 CPU has it; its own rows (K-quants too), panels (Q8_0/Q4_0
// and float weights), ops and attention. NEON + dotprod: the same ops and attention,
// SDOT row and panel kernels. NEON + i8mm: dotprod's, with SMMLA Q8_0/Q4_0 panels.
TEST(IsaTable, NeonTablesHoldTheNeonKernels) {
  testing::IsaGuard guard;
  ASSERT_TRUE(set_isa(Isa::kNeon));
  EXPECT_STREQ(isa_name(Isa::kNeon), "neon");
  EXPECT_STREQ(isa_name(Isa::kNeonDot), "neon-dotprod");
  const IsaTable& t = active_table();
  EXPECT_EQ(&t, &isa_table(Isa::kNeon));
  EXPECT_EQ(t.rows, &neon_row_kernels());
  EXPECT_FALSE(has_tiles(t));
  for (DType d : {DType::kQ8_0, DType::kQ4_0}) {
    EXPECT_EQ(panel_from(t, neon_panel_kernels(), d), 2) << dtype_name(d);
  }
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) {
    EXPECT_EQ(panel_from(t, neon_panel_kernels(), d), 4) << dtype_name(d);
  }
  for (DType d : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    EXPECT_NE(t.rows->fn[static_cast<int>(d)], scalar_row_kernels().fn[static_cast<int>(d)]) << dtype_name(d);
  }
  // Q8_K weights: the scalar twin's row kernel
  EXPECT_EQ(t.rows->fn[static_cast<int>(DType::kQ8_K)], scalar_row_kernels().fn[static_cast<int>(DType::kQ8_K)]);
  EXPECT_VEC_KERNELS(t.vec, neon_vec_kernels());
  EXPECT_FALSE(set_isa(Isa::kAvx2));
  if (!set_isa(Isa::kNeonDot)) GTEST_SKIP() << "no dotprod (HWCAP_ASIMDDP)";
  const IsaTable& d = active_table();
  EXPECT_EQ(d.rows, &neon_dot_row_kernels());
  EXPECT_EQ(panel_from(d, neon_dot_panel_kernels(), DType::kQ8_0), 2);
  EXPECT_VEC_KERNELS(d.vec, neon_vec_kernels());
  EXPECT_STREQ(isa_name(Isa::kNeonI8mm), "neon-i8mm");
  if (!set_isa(Isa::kNeonI8mm)) GTEST_SKIP() << "no i8mm (HWCAP2_I8MM)";
  const IsaTable& m = active_table();
  const PanelKernels& i8mm = neon_i8mm_panel_kernels();
  EXPECT_EQ(m.rows, &neon_dot_row_kernels());
  for (DType dt : {DType::kQ8_0, DType::kQ4_0}) {
    const int i = static_cast<int>(dt);
    EXPECT_NE(i8mm.k[i].rows, neon_dot_panel_kernels().k[i].rows) << dtype_name(dt);
    EXPECT_EQ(panel_from(m, i8mm, dt), 2) << dtype_name(dt);
  }
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    const int i = static_cast<int>(dt);
    EXPECT_EQ(i8mm.k[i].rows, neon_dot_panel_kernels().k[i].rows) << dtype_name(dt);
  }
  EXPECT_VEC_KERNELS(m.vec, neon_vec_kernels());
}
#endif

// The memory plan's matmul scratch (matmul_scratch_bytes, one thread) holds what every
// kernel row of every level this CPU has prepares (a panel's act_bytes, a tile's
// act_row_bytes per token) plus one thread's panel buffer as the panel kernel declares it
// (panel_bytes, what it asks of panel_scratch), which panel_scratch_bytes covers: the plan
// counts these bytes before serving.
TEST(IsaTable, KernelRowsFitThePlannedScratch) {
  for (Isa isa : testing::available_isas()) {
    for (const KernelRow& r : isa_table(isa).kernel_rows) {
      for (int64_t cols : {256, 768, 2048, 5632, 8192}) {
        if (r.panel != nullptr) {
          EXPECT_LE(r.panel->panel_bytes(cols), panel_scratch_bytes(cols)) << cols;
        }
        for (int64_t n : {1, 2, 15, 16, 17, 512}) {
          int64_t bytes = 0;
          if (r.panel != nullptr) bytes = r.panel->act_bytes(n, cols) + r.panel->panel_bytes(cols) + 128;
          if (r.tile != nullptr && r.tile->act_row_bytes != nullptr) bytes = n * r.tile->act_row_bytes(cols) + 128;
          EXPECT_LE(bytes, matmul_scratch_bytes(cols, n, 1))
              << isa_name(isa) << " " << dtype_name(r.dtype) << " cols " << cols << " tokens " << n;
        }
      }
    }
  }
}

}  // namespace
}  // namespace plimsoll::kernels
