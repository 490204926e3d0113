// The kernel rows (isa_table.h) choose what the per-kernel thresholds and the order of
// each level's panel tables chose before them: for every ISA level this CPU has, every
// weight dtype and batches of 1..300 tokens on narrow and wide rows, the kind of kernel
// matmul runs (panel, one token's gemv, tile, else the row kernels) equals the choice
// recorded from the code before the rows (commit eda42c4's panel_kernel_for /
// tile_kernel_for / gemv rule). Levels this CPU lacks are not recorded here.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "kernels/isa_table.h"

namespace plimsoll::kernels {
namespace {

struct OldChoice {
  const char* isa;
  const char* dtype;
  int64_t cols;
  const char* choice;  // token ranges and the path matmul took for them
};

// Printed by a test on eda42c4 that ran the old selection over the old tables.
constexpr OldChoice kOldChoices[] = {
    {"avx2", "f32", 256, "1-3:row 4-300:panel"},
    {"avx2", "f32", 4096, "1-3:row 4-300:panel"},
    {"avx2", "f16", 256, "1-3:row 4-300:panel"},
    {"avx2", "f16", 4096, "1-3:row 4-300:panel"},
    {"avx2", "bf16", 256, "1-3:row 4-300:panel"},
    {"avx2", "bf16", 4096, "1-3:row 4-300:panel"},
    {"avx2", "q8_0", 256, "1:gemv 2-7:row 8-300:panel"},
    {"avx2", "q8_0", 4096, "1:gemv 2-7:row 8-300:panel"},
    {"avx2", "q4_0", 256, "1:gemv 2-300:panel"},
    {"avx2", "q4_0", 4096, "1:gemv 2-300:panel"},
    {"avx2", "q4_k", 256, "1:gemv 2-3:row 4-300:panel"},
    {"avx2", "q4_k", 4096, "1:gemv 2-3:row 4-300:panel"},
    {"avx2", "q5_k", 256, "1:gemv 2-3:row 4-300:panel"},
    {"avx2", "q5_k", 4096, "1:gemv 2-3:row 4-300:panel"},
    {"avx2", "q6_k", 256, "1:gemv 2-3:row 4-300:panel"},
    {"avx2", "q6_k", 4096, "1:gemv 2-3:row 4-300:panel"},
    {"avx2", "q8_k", 256, "1-300:row"},
    {"avx2", "q8_k", 4096, "1-300:row"},
    {"scalar", "f32", 256, "1-300:row"},
    {"scalar", "f32", 4096, "1-300:row"},
    {"scalar", "f16", 256, "1-300:row"},
    {"scalar", "f16", 4096, "1-300:row"},
    {"scalar", "bf16", 256, "1-300:row"},
    {"scalar", "bf16", 4096, "1-300:row"},
    {"scalar", "q8_0", 256, "1-300:row"},
    {"scalar", "q8_0", 4096, "1-300:row"},
    {"scalar", "q4_0", 256, "1-300:row"},
    {"scalar", "q4_0", 4096, "1-300:row"},
    {"scalar", "q4_k", 256, "1-300:row"},
    {"scalar", "q4_k", 4096, "1-300:row"},
    {"scalar", "q5_k", 256, "1-300:row"},
    {"scalar", "q5_k", 4096, "1-300:row"},
    {"scalar", "q6_k", 256, "1-300:row"},
    {"scalar", "q6_k", 4096, "1-300:row"},
    {"scalar", "q8_k", 256, "1-300:row"},
    {"scalar", "q8_k", 4096, "1-300:row"},
};

const char* path_of(const KernelRow* r) {
  if (r == nullptr) return "row";
  if (r->panel != nullptr) return "panel";
  if (r->tile != nullptr) return "tile";
  return "gemv";
}

// "1:gemv 2-7:row 8-300:panel": the path of each batch size, runs of equal paths joined.
std::string choices(const IsaTable& table, DType dtype, int64_t cols) {
  std::string out;
  int64_t from = 1;
  for (int64_t t = 1; t <= 300; ++t) {
    const char* path = path_of(kernel_row_for(table, dtype, t, cols));
    if (t < 300 && std::string(path) == path_of(kernel_row_for(table, dtype, t + 1, cols))) continue;
    char run[48];
    if (t > from) {
      std::snprintf(run, sizeof run, "%s%lld-%lld:", out.empty() ? "" : " ", static_cast<long long>(from),
                    static_cast<long long>(t));
    } else {
      std::snprintf(run, sizeof run, "%s%lld:", out.empty() ? "" : " ", static_cast<long long>(t));
    }
    out.append(run).append(path);
    from = t + 1;
  }
  return out;
}

TEST(KernelRows, ChooseWhatTheOldThresholdsChose) {
  int checked = 0;
  for (Isa isa : cpu_isas()) {
    for (int d = 0; d < kNumDTypes; ++d) {
      const DType dtype = static_cast<DType>(d);
      for (int64_t cols : {256, 4096}) {
        const OldChoice* old = nullptr;
        for (const OldChoice& c : kOldChoices) {
          if (c.isa == std::string(isa_name(isa)) && c.dtype == dtype_name(dtype) && c.cols == cols) old = &c;
        }
        if (old == nullptr) continue;  // a level not recorded (not on the recording CPU)
        EXPECT_EQ(choices(isa_table(isa), dtype, cols), old->choice) << isa_name(isa) << " " << dtype_name(dtype)
                                                                     << " cols " << cols;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// Each row names the level whose table holds it, and a panel row of AVX2's runs AVX2's panel
// kernel for its dtype (what the old table's panels[0] held).
TEST(KernelRows, RowsNameTheirLevelAndKernel) {
  for (Isa isa : cpu_isas()) {
    for (const KernelRow& r : isa_table(isa).kernel_rows) {
      EXPECT_EQ(r.isa, isa) << isa_name(isa);
      EXPECT_EQ((r.panel != nullptr) + (r.tile != nullptr) + (r.gemv != nullptr), 1) << isa_name(isa);
#if defined(__x86_64__) || defined(__i386__)
      if (isa == Isa::kAvx2 && r.panel != nullptr) {
        EXPECT_EQ(r.panel, &avx2_panel_kernels().k[static_cast<int>(r.dtype)]) << dtype_name(r.dtype);
      }
#endif
    }
  }
}

}  // namespace
}  // namespace plimsoll::kernels
