// EventQueue: one submission's TokenEvents, pushed by the engine thread
// (never blocks) and popped by the HTTP side that answers the request.
//
// Bounded for streams (set_max_bytes, --stream-queue-bytes): the estimated
// bytes of events waiting (event_bytes) may not pass the bound, except one
// event into an empty queue (a final event's size is charged by admission).
// A push past the bound drops the event and marks the queue overflowed; from
// then on every push is dropped, and the reader cancels the ticket and ends
// the stream with an error event. So a slow reader only loses its own
// sequence and memory never grows with its slowness.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "sched/request.h"

namespace plimsoll::api {

// What one event holds in memory (strings, vectors and the struct itself).
int64_t event_bytes(const sched::TokenEvent& event);

class EventQueue : public std::enable_shared_from_this<EventQueue> {
 public:
  // items: how many final events end the submission. Unbounded until set_max_bytes.
  static std::shared_ptr<EventQueue> create(size_t items);

  // The sink to hand to GenerationService::submit; it keeps the queue alive.
  sched::EventSink sink();
  // The next event, or nullopt after `timeout` (0: do not wait).
  std::optional<sched::TokenEvent> pop(std::chrono::milliseconds timeout);
  // Every item's final event has been popped.
  bool finished() const { return finals_popped_.load() >= items_; }
  size_t items() const { return items_; }

  // Bounds the waiting events to `max_bytes` (> 0) from the next push on.
  void set_max_bytes(int64_t max_bytes);
  int64_t max_bytes() const { return max_bytes_.load(); }
  // A push was dropped for the bound; what was queued is dropped too.
  bool overflowed() const { return overflowed_.load(); }
  // Called (on the pushing thread, after the push) for every push; must not block.
  void set_listener(std::function<void()> listener);

 private:
  explicit EventQueue(size_t items) : items_(items) {}
  void push(sched::TokenEvent&& event);

  const size_t items_;
  std::atomic<size_t> finals_popped_{0};
  std::atomic<int64_t> max_bytes_{0};
  std::atomic<bool> overflowed_{false};
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<sched::TokenEvent> events_;
  int64_t queued_bytes_ = 0;
  std::shared_ptr<const std::function<void()>> listener_;
};

}  // namespace plimsoll::api
