// WorkControl: when a piece of request preparation must stop — its deadline,
// and a cancel flag set when its client leaves or the server shuts down. The
// preparation pool makes one the current control of the thread running a
// request's preparation (WorkControlScope); the loops whose work grows with the
// input (grammar compiles, template renders) poll it between pieces of work
// and return its error. With no current control nothing is ever stopped.
//
// A control may also name WorkspaceSlots: the few large workspaces (a
// grammar compile's) that preparations share, each reserved from the memory
// plan while it is held; work that needs one holds a WorkspaceLease.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/result.h"

namespace plimsoll {

class WorkspaceSlots;

class WorkControl {
 public:
  using Clock = std::chrono::steady_clock;

  // `budget_text` names the deadline in errors (e.g. "10 s (--prep-timeout-ms)").
  WorkControl(Clock::time_point deadline, std::string budget_text, WorkspaceSlots* slots = nullptr)
      : deadline_(deadline), budget_text_(std::move(budget_text)), slots_(slots) {}
  WorkspaceSlots* slots() const { return slots_; }

  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  Clock::time_point deadline() const { return deadline_; }

  // kCancelled when cancelled, kInvalidArgument naming the deadline when past it.
  Status check() const;

 private:
  std::atomic<bool> cancelled_{false};
  Clock::time_point deadline_;
  std::string budget_text_;
  WorkspaceSlots* slots_;
};

// `count` workspaces of `bytes_each` shared by the preparations of one pool.
class WorkspaceSlots {
 public:
  // Takes `bytes` from the memory plan; the hold gives them back when dropped.
  // Errors as the plan's owner answers them (kOverloaded: not now; kOutOfMemory:
  // never).
  using Reserver = std::function<Result<std::shared_ptr<void>>(int64_t bytes)>;

  WorkspaceSlots(int count, int64_t bytes_each = 0, Reserver reserve = nullptr)
      : free_(count), bytes_each_(bytes_each), reserve_(std::move(reserve)) {}
  // Waits for a free slot, polling `control` (its cancel flag and deadline),
  // then reserves its bytes (the slot is given back when they are refused).
  Result<std::shared_ptr<void>> acquire(const WorkControl& control);
  void release();

 private:
  std::mutex mutex_;
  std::condition_variable freed_;
  int free_;
  int64_t bytes_each_;
  Reserver reserve_;
};

// One of the current control's workspace slots, held for its lifetime; with
// no current control (or one without slots) it holds nothing and never waits.
class WorkspaceLease {
 public:
  // Acquires; check status() before doing the work.
  WorkspaceLease();
  ~WorkspaceLease();
  WorkspaceLease(const WorkspaceLease&) = delete;
  WorkspaceLease& operator=(const WorkspaceLease&) = delete;
  const Status& status() const { return status_; }

 private:
  WorkspaceSlots* held_ = nullptr;
  std::shared_ptr<void> bytes_;  // the workspace's reservation
  Status status_;
};

// The control of the preparation running on this thread, or nullptr.
const WorkControl* current_work_control();

// Makes `control` this thread's current control for the scope's lifetime.
class WorkControlScope {
 public:
  explicit WorkControlScope(const WorkControl* control);
  ~WorkControlScope();
  WorkControlScope(const WorkControlScope&) = delete;
  WorkControlScope& operator=(const WorkControlScope&) = delete;

 private:
  const WorkControl* previous_;
};

// Polls the current control once every `every` calls (a clock read costs
// ~20 ns; loops call this per unit of work).
class WorkPoll {
 public:
  explicit WorkPoll(int64_t every = 4096) : every_(every), left_(every) {}
  Status operator()() {
    if (--left_ > 0) return {};
    left_ = every_;
    const WorkControl* c = current_work_control();
    return c ? c->check() : Status{};
  }

 private:
  int64_t every_;
  int64_t left_;
};

}  // namespace plimsoll
