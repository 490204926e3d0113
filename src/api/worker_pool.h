// WorkerPool: the threads that run route handlers (ApiConfig::threads), fed
// by a bounded queue; a full queue refuses instead of growing.
//
// Shared by tenant (api/tenant_shares.h): a tenant's tasks running + queued
// are bounded by its share of threads + queue places, and a thread takes the
// next task from the tenant with the fewest running per weight among those
// still under their share of the threads (FIFO within a tenant). So one
// tenant's long tasks (a non-streamed generation holds its thread until it
// ends) leave the other tenants' reserves of threads free. With one tenant
// it is a plain FIFO pool.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "api/tenant_shares.h"

namespace plimsoll::api {

class WorkerPool {
 public:
  enum class Posted {
    kQueued,
    kFull,        // max_queued tasks wait already
    kTenantFull,  // the tenant holds its share of threads + queue places
    kStopped,
  };
  struct PostResult {
    Posted outcome = Posted::kQueued;
    int64_t held = 0;   // kTenantFull: the tenant's tasks running + queued
    int64_t limit = 0;  // kTenantFull: the most it may hold now
  };

  // `tenant_weights`: one per tenant (index = tenant id); empty: one tenant.
  WorkerPool(int threads, size_t max_queued, const std::vector<double>& tenant_weights = {});
  ~WorkerPool();  // stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task` for `tenant` (out of range: tenant 0); anything but
  // kQueued drops `task`.
  PostResult post(int32_t tenant, std::function<void()> task);
  // post(0, task) == kQueued.
  bool try_post(std::function<void()> task) { return post(0, std::move(task)).outcome == Posted::kQueued; }
  // No new tasks; queued ones are dropped; running ones finish; joins. Idempotent.
  void stop();
  int threads() const { return static_cast<int>(threads_.size()); }
  size_t max_queued() const { return max_queued_; }
  // Per tenant: the tasks running now.
  std::vector<int64_t> running() const;

 private:
  struct Queued {
    uint64_t seq;
    std::function<void()> task;
  };
  void run();
  // The tenant whose front task runs next, or false when none may run now. Under mutex_.
  bool pick(size_t* tenant) const;

  const size_t max_queued_;
  const std::vector<double> weights_;
  const TenantShares admit_shares_;  // of threads + max_queued: running + queued per tenant
  const TenantShares run_shares_;    // of threads: running per tenant
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<std::deque<Queued>> queues_;  // per tenant
  std::vector<int64_t> running_;            // per tenant
  std::vector<int64_t> held_;               // per tenant: running + queued
  size_t queued_ = 0;
  uint64_t next_seq_ = 0;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace plimsoll::api
