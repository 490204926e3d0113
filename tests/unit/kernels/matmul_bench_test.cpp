// A quick throughput probe, disabled by default (2-core CI): run with
//   [MATMUL_BENCH_DTYPE=iq4_xs] test_kernels --gtest_also_run_disabled_tests --gtest_filter='*MatmulBench*'
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "kernel_test_util.h"

namespace plimsoll::kernels {
namespace {

TEST(MatmulBench, DISABLED_Throughput) {
  testing::IsaGuard guard;
  const int64_t rows = 1024, cols = 4096;
  const char* only = std::getenv("MATMUL_BENCH_DTYPE");  // e.g. iq4_xs: that dtype alone
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K,
                      DType::kQ5_K, DType::kQ6_K, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kIQ4_NL,
                      DType::kQ2_K, DType::kQ3_K, DType::kIQ4_XS, DType::kIQ3_XXS, DType::kIQ3_S, DType::kIQ2_XXS,
                      DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ1_S, DType::kIQ1_M}) {
    if (only != nullptr && dtype_name(dtype) != std::string_view(only)) continue;
    const testing::Weights w = testing::make_weights(dtype, rows, cols, 1);
    for (int64_t n_tokens : {1, 8, 128}) {
      const std::vector<float> x = testing::random_floats(n_tokens * cols, 2);
      std::vector<float> y(static_cast<size_t>(n_tokens * rows));
      for (Isa isa : testing::available_isas()) {
        set_isa(isa);
        const int reps = isa == Isa::kScalar ? 1 : 10;
        matmul(w.view, x.data(), n_tokens, y.data());  // warm up
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i) matmul(w.view, x.data(), n_tokens, y.data());
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
        std::printf("%-5s %-7s tokens %2lld: %8.3f ms  %7.2f GMAC/s\n", std::string(dtype_name(dtype)).c_str(),
                    isa_name(isa), static_cast<long long>(n_tokens), s * 1e3,
                    double(rows * cols * n_tokens) / s * 1e-9);
      }
    }
  }
}

}  // namespace
}  // namespace plimsoll::kernels
