// The three Prometheus metric kinds as lock-free values: Counter, Gauge and
// Histogram (fixed buckets). Observing never allocates or locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace plimsoll::metrics {

// A monotonically increasing value (requests, tokens, seconds).
class Counter {
 public:
  void inc(double amount = 1.0) {
    if (amount > 0) value_.fetch_add(amount, std::memory_order_relaxed);
  }
  // Mirrors a total counted elsewhere (e.g. the scheduler's preemptions):
  // raises the value to `total`, never lowers it.
  void advance_to(double total);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down (queue size, bytes resident).
class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  void add(double amount) { value_.fetch_add(amount, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Counts observations into fixed buckets chosen at registration.
class Histogram {
 public:
  // upper_bounds: strictly increasing, finite; +Inf is implicit.
  explicit Histogram(std::span<const double> upper_bounds);

  void observe(double value);

  struct Snapshot {
    std::vector<double> upper_bounds;     // without +Inf
    std::vector<uint64_t> cumulative;     // one per bound, then +Inf (= count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;
  std::span<const double> upper_bounds() const { return upper_bounds_; }

 private:
  std::vector<double> upper_bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // upper_bounds_.size() + 1, not cumulative
  std::atomic<double> sum_{0.0};
  std::atomic<uint64_t> count_{0};
};

}  // namespace plimsoll::metrics
