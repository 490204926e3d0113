// EventQueue: one submission's TokenEvents, pushed by the engine thread
// (never blocks) and popped by the HTTP worker that answers the request.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "sched/request.h"

namespace plimsoll::api {

class EventQueue : public std::enable_shared_from_this<EventQueue> {
 public:
  // items: how many final events end the submission.
  static std::shared_ptr<EventQueue> create(size_t items);

  // The sink to hand to GenerationService::submit; it keeps the queue alive.
  sched::EventSink sink();
  // The next event, or nullopt after `timeout`.
  std::optional<sched::TokenEvent> pop(std::chrono::milliseconds timeout);
  // Every item's final event has been popped.
  bool finished() const { return finals_popped_.load() >= items_; }
  size_t items() const { return items_; }

 private:
  explicit EventQueue(size_t items) : items_(items) {}
  void push(sched::TokenEvent&& event);

  const size_t items_;
  std::atomic<size_t> finals_popped_{0};
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<sched::TokenEvent> events_;
};

}  // namespace plimsoll::api
