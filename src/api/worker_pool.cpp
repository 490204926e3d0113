// A mutex-guarded queue per tenant with a cap, a condition variable, and the
// choice of which tenant's task runs next.
#include "api/worker_pool.h"

namespace plimsoll::api {
namespace {

size_t tenant_count(const std::vector<double>& weights) { return weights.empty() ? 1 : weights.size(); }

// One weight per tenant, each > 0 (a missing or non-positive one counts as 1).
std::vector<double> positive_weights(const std::vector<double>& weights) {
  std::vector<double> out = weights.empty() ? std::vector<double>{1.0} : weights;
  for (double& w : out) {
    if (!(w > 0)) w = 1.0;
  }
  return out;
}

}  // namespace

WorkerPool::WorkerPool(int threads, size_t max_queued, const std::vector<double>& tenant_weights)
    : max_queued_(max_queued),
      weights_(positive_weights(tenant_weights)),
      admit_shares_(static_cast<int64_t>(threads) + static_cast<int64_t>(max_queued), weights_),
      run_shares_(threads, weights_),
      queues_(tenant_count(tenant_weights)),
      running_(tenant_count(tenant_weights), 0),
      held_(tenant_count(tenant_weights), 0) {
  threads_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

WorkerPool::~WorkerPool() { stop(); }

WorkerPool::PostResult WorkerPool::post(int32_t tenant, std::function<void()> task) {
  const size_t t = tenant >= 0 && static_cast<size_t>(tenant) < queues_.size() ? static_cast<size_t>(tenant) : 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) return {Posted::kStopped};
    if (queued_ >= max_queued_) return {Posted::kFull};
    if (!admit_shares_.fits(t, 1, held_)) return {Posted::kTenantFull, held_[t], admit_shares_.limit(t, held_)};
    queues_[t].push_back(Queued{next_seq_++, std::move(task)});
    ++held_[t];
    ++queued_;
  }
  ready_.notify_one();
  return {};
}

void WorkerPool::stop() {
  std::vector<std::deque<Queued>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    dropped.swap(queues_);
    queues_.resize(dropped.size());
    for (size_t t = 0; t < held_.size(); ++t) held_[t] = running_[t];
    queued_ = 0;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

std::vector<int64_t> WorkerPool::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

bool WorkerPool::pick(size_t* tenant) const {
  bool found = false;
  for (size_t t = 0; t < queues_.size(); ++t) {
    if (queues_[t].empty() || !run_shares_.fits(t, 1, running_)) continue;
    if (!found) {
      *tenant = t;
      found = true;
      continue;
    }
    const size_t b = *tenant;
    const double mine = static_cast<double>(running_[t]) / weights_[t];
    const double best = static_cast<double>(running_[b]) / weights_[b];
    if (mine < best || (mine == best && queues_[t].front().seq < queues_[b].front().seq)) *tenant = t;
  }
  return found;
}

void WorkerPool::run() {
  for (;;) {
    std::function<void()> task;
    size_t t = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this, &t] { return stopped_ || pick(&t); });
      if (stopped_) return;
      task = std::move(queues_[t].front().task);
      queues_[t].pop_front();
      --queued_;
      ++running_[t];
    }
    task();
    task = nullptr;  // its captures go before the slot is given back
    bool more = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --running_[t];
      --held_[t];
      more = queued_ > 0;
    }
    // A task that finished may let another tenant's queued task run (its
    // share of the threads depends on what the others run): every idle thread looks.
    if (more) ready_.notify_all();
  }
}

}  // namespace plimsoll::api
