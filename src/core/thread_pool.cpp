// ThreadPool implementation: a job generation counter and a pending count,
// both atomics; waiters spin briefly, then sleep with atomic::wait (a futex).
#include "core/thread_pool.h"

#include <sched.h>

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace plimsoll {
namespace {

inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Waits until `value` differs from `old`: a few pauses, then yields (a CPU
// shared with other runnable threads goes to them; an idle one comes straight
// back), then futex sleeps.
template <typename T>
T wait_for_change(const std::atomic<T>& value, T old) {
  for (int i = 0; i < ThreadPool::kSpinRounds; ++i) {
    const T now = value.load(std::memory_order_acquire);
    if (now != old) return now;
    if (i < ThreadPool::kPauseRounds) {
      cpu_pause();
    } else {
      sched_yield();
    }
  }
  for (;;) {
    value.wait(old, std::memory_order_acquire);
    const T now = value.load(std::memory_order_acquire);
    if (now != old) return now;
  }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
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
  fn_ = &fn;
  n_ = n;
  grain_ = grain;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);  // publishes the job
  generation_.notify_all();
  run_chunk(0);
  for (int32_t left = pending_.load(std::memory_order_acquire); left != 0;) {
    left = wait_for_change(pending_, left);
  }
  fn_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  uint32_t seen = 0;
  for (;;) {
    seen = wait_for_change(generation_, seen);
    if (stop_.load(std::memory_order_relaxed)) return;
    run_chunk(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace plimsoll
