// PrepPool: the request-preparation stage. Everything between a body read
// and its sequences admitted — the JSON parse, validation, chat template,
// tokenization, grammar compile and the submission itself — runs here, on a
// bounded pool that is neither the HTTP workers nor the engine thread, under
// a WorkControl: a deadline from when the request was handed over, and a
// cancel flag set when its client leaves or the server stops. Work that grows
// with the input polls it (engine/grammar, chat/jinja) and stops.
//
// Memory: what a preparation holds besides the JSON tree (the body budget's),
// the template render and the prompts' tokens (reserved from admission's
// request budget before they are built) is a grammar compile and the
// automaton it keeps until admission takes it (prep_workspace_bytes). A
// compile takes one of `compile_slots` workspaces (WorkspaceSlots, waiting
// when none is free) and reserves its bytes from the request budget too
// while it runs, so the stage is inside the memory plan however many
// requests arrive and however many threads prepare them. The JSON tree is the body budget's; the
// template's output and the prompts' tokens are reserved from admission
// before they are built.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "api/tenant_shares.h"
#include "api/worker_pool.h"
#include "core/result.h"
#include "core/work_control.h"

namespace plimsoll::api {

struct ApiConfig;

// What one preparation may hold beyond admission's charges: one grammar
// compile at its byte limit; its automaton (never larger than the compile
// held) stays until the submission is charged for it, and a request compiles
// at most one grammar (response_format, or a forced tool call).
int64_t prep_workspace_bytes();

class PrepPool {
 public:
  using Clock = std::chrono::steady_clock;

  // `compile_slots`: grammar compiles that may run at once, each reserving
  // prep_workspace_bytes() through `reserve` (none when null, as in tests);
  // the others wait for a slot, cancellable. `tenants`: who shares the
  // threads and queue places (WorkerPool's rule); `refusals` (may be null)
  // counts each tenant's refusals for its share.
  PrepPool(int threads, size_t max_queued, std::chrono::milliseconds timeout, int compile_slots = 1,
           WorkspaceSlots::Reserver reserve = nullptr, TenantSet tenants = {}, TenantRefusals* refusals = nullptr);
  ~PrepPool();  // stop()
  PrepPool(const PrepPool&) = delete;
  PrepPool& operator=(const PrepPool&) = delete;

  // Runs `prepare` for `tenant` on a pool thread and waits for it (it may
  // capture the caller's locals by reference: run returns only once
  // `prepare` has returned or was never started). Its status, or:
  // kOverloaded (429) when max_queued preparations wait already, or the
  // tenant holds its share of threads + queue places, or the deadline passed
  // before it started; kCancelled when `client_gone` became true;
  // kUnavailable (503) when the pool stopped. A preparation past its
  // deadline while running fails with kInvalidArgument (422) from the work
  // that noticed it.
  Status run(const std::function<Status()>& prepare, const std::atomic<bool>* client_gone, int32_t tenant = 0);

  // Cancels every preparation running or waiting, refuses new ones, joins.
  // Idempotent; returns within the time the slowest poll point takes.
  void stop();

  int threads() const { return pool_.threads(); }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // Preparations running or waiting now.
  int64_t in_flight() const { return in_flight_.load(); }

 private:
  struct Job;

  Status refusal(const WorkerPool::PostResult& posted, int32_t tenant) const;

  std::chrono::milliseconds timeout_;
  WorkspaceSlots compile_slots_;
  const TenantSet tenants_;
  TenantRefusals* const refusals_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> in_flight_{0};
  std::mutex jobs_mutex_;
  std::vector<Job*> jobs_;  // waiting callers' jobs, for stop() to cancel
  WorkerPool pool_;         // last: its threads stop before the rest goes
};

}  // namespace plimsoll::api
