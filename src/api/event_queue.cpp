// The hand-off between the engine thread's sink and an HTTP worker: a
// mutex-guarded deque and a condition variable.
#include "api/event_queue.h"

namespace plimsoll::api {

std::shared_ptr<EventQueue> EventQueue::create(size_t items) {
  return std::shared_ptr<EventQueue>(new EventQueue(items));
}

sched::EventSink EventQueue::sink() {
  std::shared_ptr<EventQueue> self = shared_from_this();
  return [self](sched::TokenEvent&& event) { self->push(std::move(event)); };
}

void EventQueue::push(sched::TokenEvent&& event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(event));
  }
  ready_.notify_one();
}

std::optional<sched::TokenEvent> EventQueue::pop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [this] { return !events_.empty(); })) return std::nullopt;
  sched::TokenEvent event = std::move(events_.front());
  events_.pop_front();
  if (event.final) finals_popped_.fetch_add(1);
  return event;
}

}  // namespace plimsoll::api
