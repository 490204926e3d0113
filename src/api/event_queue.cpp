// The hand-off between the engine thread's sink and the HTTP side: a
// mutex-guarded deque with a byte bound, a condition variable and a listener.
#include "api/event_queue.h"

namespace plimsoll::api {
namespace {

int64_t token_bytes(const sched::TokenInfo& t) {
  return static_cast<int64_t>(sizeof(sched::TokenInfo) + t.text.capacity());
}

}  // namespace

int64_t event_bytes(const sched::TokenEvent& event) {
  int64_t bytes = static_cast<int64_t>(sizeof(sched::TokenEvent) + event.text.capacity() +
                                       event.generated_text.capacity() + event.token.text.capacity());
  for (const auto& t : event.top_tokens) bytes += token_bytes(t);
  for (const auto& t : event.prefill) bytes += token_bytes(t);
  for (const auto& row : event.prefill_top) {
    bytes += static_cast<int64_t>(sizeof(row));
    for (const auto& t : row) bytes += token_bytes(t);
  }
  if (event.error) bytes += static_cast<int64_t>(event.error->message.capacity());
  return bytes;
}

std::shared_ptr<EventQueue> EventQueue::create(size_t items) {
  return std::shared_ptr<EventQueue>(new EventQueue(items));
}

sched::EventSink EventQueue::sink() {
  std::shared_ptr<EventQueue> self = shared_from_this();
  return [self](sched::TokenEvent&& event) { self->push(std::move(event)); };
}

void EventQueue::set_max_bytes(int64_t max_bytes) { max_bytes_.store(max_bytes); }

void EventQueue::set_listener(std::function<void()> listener) {
  std::lock_guard<std::mutex> lock(mutex_);
  listener_ = listener ? std::make_shared<const std::function<void()>>(std::move(listener)) : nullptr;
}

void EventQueue::push(sched::TokenEvent&& event) {
  std::shared_ptr<const std::function<void()>> listener;
  std::deque<sched::TokenEvent> dropped;  // freed outside the lock
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (overflowed_.load()) return;
    const int64_t bytes = event_bytes(event);
    const int64_t max = max_bytes_.load();
    if (max > 0 && !events_.empty() && queued_bytes_ + bytes > max) {
      overflowed_.store(true);
      dropped.swap(events_);
      queued_bytes_ = 0;
    } else {
      queued_bytes_ += bytes;
      events_.push_back(std::move(event));
    }
    listener = listener_;
  }
  ready_.notify_one();
  if (listener) (*listener)();
}

std::optional<sched::TokenEvent> EventQueue::pop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [this] { return !events_.empty(); })) return std::nullopt;
  sched::TokenEvent event = std::move(events_.front());
  events_.pop_front();
  queued_bytes_ -= event_bytes(event);
  if (event.final) finals_popped_.fetch_add(1);
  return event;
}

}  // namespace plimsoll::api
