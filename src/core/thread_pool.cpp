// ThreadPool implementation: a job is cut into chunks that the caller and the
// workers claim one at a time from one atomic word (the job's generation, its
// chunk count and the next chunk), so a worker the OS has not scheduled yet
// holds up nothing: the threads that run take its chunks. Waiters spin
// briefly, then sleep with atomic::wait (a futex).
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

// The claim word: job generation (bits 32-63), chunk count (16-31), next chunk (0-15).
constexpr uint64_t kChunkMask = 0xFFFF;
inline uint64_t next_chunk(uint64_t s) { return s & kChunkMask; }
inline uint64_t chunk_count(uint64_t s) { return (s >> 16) & kChunkMask; }

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
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

// Claims and runs chunks of the current job until none is left. The job's fields
// are read only after a claim succeeded: the caller rewrites them only once every
// claimed chunk is done.
void ThreadPool::run_chunks() {
  uint64_t s = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (next_chunk(s) >= chunk_count(s)) return;
    if (!claim_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    const int64_t chunk = static_cast<int64_t>(next_chunk(s)), n_chunks = static_cast<int64_t>(chunk_count(s));
    const int64_t n_grains = (n_ + grain_ - 1) / grain_;
    const int64_t begin = std::min(n_, chunk * n_grains / n_chunks * grain_);
    const int64_t end = std::min(n_, (chunk + 1) * n_grains / n_chunks * grain_);
    if (begin < end) (*fn_)(begin, end);
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<int32_t>(n_chunks)) done_.notify_one();
    s = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (n_threads_ == 1 || n <= grain) {
    fn(0, n);
    return;
  }
  const int64_t n_grains = (n + grain - 1) / grain;
  const auto n_chunks = static_cast<uint64_t>(std::min<int64_t>({n_grains, int64_t{n_threads_} * kChunksPerThread, int64_t{kChunkMask}}));
  fn_ = &fn;
  n_ = n;
  grain_ = grain;
  done_.store(0, std::memory_order_relaxed);
  job_ += 1;
  claim_.store((job_ << 32) | (n_chunks << 16), std::memory_order_release);  // publishes the job
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  run_chunks();
  for (int32_t done = done_.load(std::memory_order_acquire); done != static_cast<int32_t>(n_chunks);) {
    done = wait_for_change(done_, done);
  }
  fn_ = nullptr;
}

void ThreadPool::on_every_thread(RangeFn fn) {
  // n_threads chunks of one item each: a thread that claimed one holds it until
  // all are claimed, so each chunk runs on a different thread.
  std::atomic<int32_t> arrived{0};
  auto run = [&](int64_t begin, int64_t end) {
    fn(begin, end);
    int32_t now = arrived.fetch_add(1, std::memory_order_acq_rel) + 1;
    if (now == n_threads_) arrived.notify_all();
    while (now != n_threads_) now = wait_for_change(arrived, now);
  };
  parallel_for(n_threads_, 1, run);
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  for (;;) {
    seen = wait_for_change(generation_, seen);
    if (stop_.load(std::memory_order_relaxed)) return;
    run_chunks();
  }
}

}  // namespace plimsoll
