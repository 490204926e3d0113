#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
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

// A worker that is stuck (as one the OS does not schedule on a loaded machine)
// holds up only the chunk it is running: the caller runs every other chunk,
// including those a fixed split would have given the worker (a fixed split of 2
// threads leaves half the range to the worker: the last check fails).
TEST(ThreadPool, OnEveryThreadRunsOnceOnEachThreadIncludingTheCaller) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 50; ++round) {
      std::mutex mu;
      std::vector<std::thread::id> ids;
      std::vector<int64_t> indexes;
      pool.on_every_thread([&](int64_t begin, int64_t end) {
        std::lock_guard<std::mutex> lock(mu);
        ids.push_back(std::this_thread::get_id());
        for (int64_t i = begin; i < end; ++i) indexes.push_back(i);
      });
      ASSERT_EQ(ids.size(), static_cast<size_t>(threads));
      EXPECT_NE(std::find(ids.begin(), ids.end(), std::this_thread::get_id()), ids.end());
      std::sort(ids.begin(), ids.end());
      EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end()) << threads << " threads, round " << round;
      std::sort(indexes.begin(), indexes.end());
      for (int i = 0; i < threads; ++i) EXPECT_EQ(indexes[static_cast<size_t>(i)], i);
    }
  }
}

TEST(ThreadPool, CallerTakesTheChunksOfAStuckWorker) {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  constexpr int64_t kN = 64;
  std::atomic<int64_t> caller_items{0}, worker_items{0};
  std::atomic<bool> others_done_in_time{true};
  auto fn = [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() == caller) {
      caller_items += e - b;
      return;
    }
    // The worker's chunk waits (with a deadline) until the caller has run all the others.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (caller_items.load() + (e - b) < kN) {
      if (std::chrono::steady_clock::now() > deadline) {
        others_done_in_time = false;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    worker_items += e - b;
  };
  pool.parallel_for(kN, 1, fn);
  EXPECT_TRUE(others_done_in_time.load());
  EXPECT_EQ(caller_items.load() + worker_items.load(), kN);
  EXPECT_LE(worker_items.load(), kN / (2 * ThreadPool::kChunksPerThread));  // one chunk at most
}

}  // namespace
}  // namespace plimsoll
