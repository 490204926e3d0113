// The thread's current WorkControl and its check.
#include "core/work_control.h"

namespace plimsoll {
namespace {
thread_local const WorkControl* g_current = nullptr;
}  // namespace

Status WorkControl::check() const {
  if (cancelled()) {
    return make_error(ErrorCode::kCancelled, "the request was cancelled (its client left, or the server is stopping)");
  }
  if (Clock::now() > deadline_) {
    return make_error(ErrorCode::kInvalidArgument,
                      "preparing the request took longer than its limit of " + budget_text_);
  }
  return {};
}

const WorkControl* current_work_control() { return g_current; }

Result<std::shared_ptr<void>> WorkspaceSlots::acquire(const WorkControl& control) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    while (free_ == 0) {
      PLIMSOLL_TRY(control.check());
      freed_.wait_for(lock, std::chrono::milliseconds(20));
    }
    --free_;
  }
  if (!reserve_) return std::shared_ptr<void>();
  Result<std::shared_ptr<void>> bytes = reserve_(bytes_each_);
  if (!bytes.ok()) release();
  return bytes;
}

void WorkspaceSlots::release() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++free_;
  }
  freed_.notify_one();
}

WorkspaceLease::WorkspaceLease() {
  const WorkControl* c = current_work_control();
  if (!c || !c->slots()) return;
  Result<std::shared_ptr<void>> bytes = c->slots()->acquire(*c);
  if (!bytes.ok()) {
    status_ = bytes.error();
    return;
  }
  bytes_ = std::move(*bytes);
  held_ = c->slots();
}

WorkspaceLease::~WorkspaceLease() {
  bytes_.reset();  // the bytes go back before the slot does
  if (held_) held_->release();
}

WorkControlScope::WorkControlScope(const WorkControl* control) : previous_(g_current) { g_current = control; }

WorkControlScope::~WorkControlScope() { g_current = previous_; }

}  // namespace plimsoll
