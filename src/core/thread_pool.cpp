// ThreadPool implementation: generation counter + condition variables.
#include "core/thread_pool.h"

#include <sched.h>

#include <algorithm>

namespace plimsoll {

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int ThreadPool::hardware_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void ThreadPool::run_chunk(int index) {
  const int64_t n_grains = (n_ + grain_ - 1) / grain_;
  const int64_t per = n_grains / n_threads_;
  const int64_t extra = n_grains % n_threads_;
  const int64_t g0 = index * per + std::min<int64_t>(index, extra);
  const int64_t g1 = g0 + per + (index < extra ? 1 : 0);
  const int64_t begin = std::min(n_, g0 * grain_);
  const int64_t end = std::min(n_, g1 * grain_);
  if (begin < end) (*fn_)(begin, end);
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (n_threads_ == 1 || n <= grain) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    grain_ = grain;
    pending_ = n_threads_ - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  run_chunk(0);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  fn_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_chunk(index);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace plimsoll
