// WorkerPool: the threads that run route handlers (ApiConfig::threads), fed
// by a bounded queue; a full queue refuses instead of growing.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace plimsoll::api {

class WorkerPool {
 public:
  WorkerPool(int threads, size_t max_queued);
  ~WorkerPool();  // stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task`; false (and `task` is dropped) when max_queued tasks wait or the pool stopped.
  bool try_post(std::function<void()> task);
  // No new tasks; queued ones are dropped; running ones finish; joins. Idempotent.
  void stop();
  int threads() const { return static_cast<int>(threads_.size()); }
  size_t max_queued() const { return max_queued_; }

 private:
  void run();

  const size_t max_queued_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace plimsoll::api
