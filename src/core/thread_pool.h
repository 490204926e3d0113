// ThreadPool: a fixed set of worker threads that split a range of work with
// the calling thread (which takes part). No allocation per call, no spinning:
// idle workers sleep on a condition variable.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
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

  // Splits [0, n) into n_threads contiguous chunks, aligned to `grain`
  // (chunk boundaries are multiples of grain), runs fn(begin, end) on each
  // and returns when all are done. Not re-entrant.
  void parallel_for(int64_t n, int64_t grain, RangeFn fn);

  template <typename F>
  void parallel_for(int64_t n, int64_t grain, F&& f) {
    auto& ref = f;
    parallel_for(n, grain, RangeFn(ref));
  }

  // Cores available to this process (sched_getaffinity), at least 1.
  static int hardware_threads();

 private:
  void worker_loop(int index);
  void run_chunk(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  // current job
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t grain_ = 1;
};

}  // namespace plimsoll
