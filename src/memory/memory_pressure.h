// MemoryPressure: the backstop's verdict, shared. The composition root makes
// one; the MemoryWatcher is its only writer; admission and /metrics read it
// (lock-free: every field is its own atomic).
#pragma once

#include <atomic>
#include <cstdint>

namespace plimsoll {

class MemoryPressure {
 public:
  struct Figures {
    int64_t usage_bytes = 0;       // the last reading
    int64_t high_water_bytes = 0;  // at or above: pressure
    int64_t rearm_bytes = 0;       // below: pressure ends
    int64_t limit_bytes = 0;       // the limit the marks are set under
  };

  // True while new generation work must be refused.
  bool active() const { return active_.load(std::memory_order_acquire); }
  Figures figures() const {
    return Figures{usage_.load(std::memory_order_relaxed), high_water_.load(std::memory_order_relaxed),
                   rearm_.load(std::memory_order_relaxed), limit_.load(std::memory_order_relaxed)};
  }
  // Times pressure began since start.
  int64_t trips() const { return trips_.load(std::memory_order_relaxed); }

  // --- the watcher's side ---
  void set_marks(int64_t high_water_bytes, int64_t rearm_bytes, int64_t limit_bytes) {
    high_water_.store(high_water_bytes, std::memory_order_relaxed);
    rearm_.store(rearm_bytes, std::memory_order_relaxed);
    limit_.store(limit_bytes, std::memory_order_relaxed);
  }
  void set_usage(int64_t usage_bytes) { usage_.store(usage_bytes, std::memory_order_relaxed); }
  void set_active(bool on) {
    if (on && !active_.exchange(true, std::memory_order_acq_rel)) trips_.fetch_add(1, std::memory_order_relaxed);
    if (!on) active_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> active_{false};
  std::atomic<int64_t> usage_{0}, high_water_{0}, rearm_{0}, limit_{0}, trips_{0};
};

}  // namespace plimsoll
