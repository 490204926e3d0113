#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace plimsoll {
namespace {

TEST(ThreadPool, CoversRangeExactlyOnceAlignedToGrain) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 7, 64, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      auto fn = [&](int64_t b, int64_t e) {
        EXPECT_EQ(b % 4, 0);
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      };
      pool.parallel_for(n, 4, fn);
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1);
    }
  }
}

TEST(ThreadPool, ManyRoundsInARow) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  for (int round = 0; round < 2000; ++round) {
    pool.parallel_for(100, 1, [&](int64_t b, int64_t e) { sum += e - b; });
  }
  EXPECT_EQ(sum.load(), 200000);
}

}  // namespace
}  // namespace plimsoll
