// The preparation pool: a WorkerPool of its own, one shared job per request
// (the caller waits on it, polling its client), and the workspace figure.
#include "api/prep_pool.h"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include "core/work_control.h"
#include "engine/grammar/grammar.h"

namespace plimsoll::api {
namespace {

// How often a waiting caller looks at its client and the pool's stop flag.
constexpr std::chrono::milliseconds kPollInterval{20};

}  // namespace

int64_t prep_workspace_bytes() { return GrammarLimits{}.max_compile_bytes; }

struct PrepPool::Job {
  Job(Clock::time_point deadline, std::string limit_text, WorkspaceSlots* slots)
      : control(deadline, std::move(limit_text), slots) {}
  WorkControl control;
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  Status status;

  void finish(Status s) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (done) return;
      done = true;
      status = std::move(s);
    }
    done_cv.notify_all();
  }
};

PrepPool::PrepPool(int threads, size_t max_queued, std::chrono::milliseconds timeout, int compile_slots,
                   WorkspaceSlots::Reserver reserve, TenantSet tenants, TenantRefusals* refusals)
    : timeout_(timeout),
      compile_slots_(std::max(1, compile_slots), prep_workspace_bytes(), std::move(reserve)),
      tenants_(std::move(tenants)),
      refusals_(refusals),
      pool_(std::max(1, threads), max_queued, tenants_.weights) {}

Status PrepPool::refusal(const WorkerPool::PostResult& posted, int32_t tenant) const {
  if (posted.outcome == WorkerPool::Posted::kStopped) return make_error(ErrorCode::kUnavailable, "the server is stopping");
  if (posted.outcome == WorkerPool::Posted::kTenantFull) {
    if (refusals_) refusals_->add(tenants_.index(tenant));
    return make_error(ErrorCode::kOverloaded,
                      fmt::format("{} holds {} of the {} preparation threads and waiting places and its share now is "
                                  "{} (--prep-threads, --prep-queue; the other tenants' reserves are kept free for "
                                  "them): retry later",
                                  tenants_.label(tenant), posted.held, pool_.threads() + pool_.max_queued(),
                                  posted.limit));
  }
  return make_error(ErrorCode::kOverloaded,
                    fmt::format("{} preparation threads are busy and {} requests wait for them (--prep-threads)",
                                pool_.threads(), pool_.max_queued()));
}

PrepPool::~PrepPool() { stop(); }

Status PrepPool::run(const std::function<Status()>& prepare, const std::atomic<bool>* client_gone, int32_t tenant) {
  if (stopping_.load()) return make_error(ErrorCode::kUnavailable, "the server is stopping");
  const Clock::time_point deadline = Clock::now() + timeout_;
  auto job = std::make_shared<Job>(deadline, fmt::format("{} ms (--prep-timeout-ms)", timeout_.count()),
                                   &compile_slots_);
  // Finishes the job when the task is destroyed without having run (the
  // pool stopped and dropped it), so the caller never waits for nothing.
  struct Unrun {
    std::shared_ptr<Job> job;
    ~Unrun() {
      if (job) job->finish(make_error(ErrorCode::kUnavailable, "the server is stopping"));
    }
  };
  auto unrun = std::make_shared<Unrun>();  // (built in place: a copy's destructor would finish the job)
  unrun->job = job;
  in_flight_.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(jobs_mutex_);
    jobs_.push_back(job.get());
  }
  const WorkerPool::PostResult posted = pool_.post(tenant, [job, unrun, &prepare] {
    if (job->control.cancelled()) return job->finish(job->control.check());
    if (Clock::now() > job->control.deadline()) {
      return job->finish(make_error(ErrorCode::kOverloaded, "the request waited for a preparation thread longer "
                                                            "than its limit (--prep-timeout-ms)"));
    }
    WorkControlScope scope(&job->control);
    // Exceptions stay on this thread, answered as the route edge answers them.
    try {
      job->finish(prepare());
    } catch (const nlohmann::json::exception& e) {
      job->finish(make_error(ErrorCode::kInvalidArgument, e.what()));
    } catch (const std::exception& e) {
      job->finish(make_error(ErrorCode::kInternal, e.what()));
    }
  });
  if (posted.outcome != WorkerPool::Posted::kQueued) {
    unrun->job.reset();
    job->finish(refusal(posted, tenant));
  }
  unrun.reset();
  {
    std::unique_lock<std::mutex> lock(job->mutex);
    while (!job->done) {
      job->done_cv.wait_for(lock, kPollInterval);
      if (job->done) break;
      if ((client_gone && client_gone->load()) || stopping_.load()) job->control.cancel();
    }
  }
  {
    std::lock_guard<std::mutex> lock(jobs_mutex_);
    jobs_.erase(std::find(jobs_.begin(), jobs_.end(), job.get()));
  }
  in_flight_.fetch_sub(1);
  if (stopping_.load() && !job->status.ok()) return make_error(ErrorCode::kUnavailable, "the server is stopping");
  return job->status;
}

void PrepPool::stop() {
  stopping_.store(true);
  {
    std::lock_guard<std::mutex> lock(jobs_mutex_);
    for (Job* j : jobs_) j->control.cancel();
  }
  pool_.stop();
}

}  // namespace plimsoll::api
