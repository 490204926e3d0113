// ThreadPool: a fixed set of worker threads that split a range of work with
// the calling thread (which takes part). No allocation per call. The range is
// cut into a few chunks per thread that each thread claims as it gets to them,
// so a thread the OS has preempted (a loaded machine) delays a job by at most
// the chunk it is running, never by a share fixed up front. Between jobs
// a worker waits a short, bounded time awake (pauses, then yields: ~0.1-0.2 ms)
// so the next parallel_for of the same forward pass starts without a futex
// wake-up, then sleeps in the kernel: an idle pool uses no CPU.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace plimsoll {

// A non-owning reference to a callable void(int64_t begin, int64_t end).
class RangeFn {
 public:
  template <typename F>
  RangeFn(F& f)  // NOLINT: implicit so lambdas bind directly
      : obj_(static_cast<void*>(&f)),
        call_([](void* o, int64_t b, int64_t e) { (*static_cast<F*>(o))(b, e); }) {}
  void operator()(int64_t begin, int64_t end) const { call_(obj_, begin, end); }

 private:
  void* obj_;
  void (*call_)(void*, int64_t, int64_t);
};

class ThreadPool {
 public:
  // n_threads counts the caller: 1 means no workers at all.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Splits [0, n) into up to kChunksPerThread x n_threads contiguous chunks,
  // aligned to `grain` (chunk boundaries are multiples of grain), runs
  // fn(begin, end) on each (on whichever thread claims it first) and returns
  // when all are done. Not re-entrant; one caller at a time.
  void parallel_for(int64_t n, int64_t grain, RangeFn fn);

  template <typename F>
  void parallel_for(int64_t n, int64_t grain, F&& f) {
    auto& ref = f;
    parallel_for(n, grain, RangeFn(ref));
  }

  // Runs fn(i, i + 1) once on each thread of the pool (the caller and every
  // worker, i = 0..n_threads-1 in claim order) and returns when all are done:
  // for per-thread state such as thread_local buffers. Each call waits until
  // every thread has arrived, so no thread runs two of them.
  void on_every_thread(RangeFn fn);

  template <typename F>
  void on_every_thread(F&& f) {
    auto& ref = f;
    on_every_thread(RangeFn(ref));
  }

  // Cores available to this process (sched_getaffinity), at least 1.
  static int hardware_threads();

  // A waiting thread checks kSpinRounds times before it sleeps: the first
  // kPauseRounds with a pause, the rest after sched_yield (~0.1-0.2 ms in all
  // on an idle core; on a busy one the other threads run meanwhile).
  static constexpr int kPauseRounds = 64;
  static constexpr int kSpinRounds = 400;
  static constexpr int kChunksPerThread = 4;

 private:
  void worker_loop();
  void run_chunks();

  int n_threads_;
  std::vector<std::thread> workers_;
  // Bumped (release) once per job and at shutdown; workers wait on it.
  std::atomic<uint32_t> generation_{0};
  // The claim word (thread_pool.cpp): job number, chunk count, next chunk to run.
  std::atomic<uint64_t> claim_{0};
  // Chunks of the current job finished; the caller waits for all of them.
  std::atomic<int32_t> done_{0};
  std::atomic<bool> stop_{false};
  uint64_t job_ = 0;  // the caller's job counter (claim_'s high bits)
  // The current job, written by the caller before publishing it in claim_.
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t grain_ = 1;
};

}  // namespace plimsoll
