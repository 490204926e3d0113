// Counter, Gauge and Histogram: the atomic updates and the histogram's
// bucket search and cumulative snapshot.
#include "metrics/metric.h"

#include <algorithm>

namespace plimsoll::metrics {

void Counter::advance_to(double total) {
  double current = value_.load(std::memory_order_relaxed);
  while (total > current &&
         !value_.compare_exchange_weak(current, total, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::span<const double> upper_bounds)
    : upper_bounds_(upper_bounds.begin(), upper_bounds.end()),
      buckets_(new std::atomic<uint64_t>[upper_bounds.size() + 1]) {
  for (size_t i = 0; i <= upper_bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::observe(double value) {
  if (value != value) return;  // NaN: nothing sensible to count
  // The first bucket whose upper bound is >= value (Prometheus buckets are "le").
  auto it = std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value);
  size_t bucket = static_cast<size_t>(it - upper_bounds_.begin());
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.upper_bounds = upper_bounds_;
  s.cumulative.resize(upper_bounds_.size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= upper_bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = running;
  }
  // Read independently of the buckets; keep the exposition self-consistent.
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace plimsoll::metrics
