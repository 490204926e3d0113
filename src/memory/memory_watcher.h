// MemoryWatcher: the backstop behind the memory plan. A thread reads the
// kernel's own figure (memory_usage.h) every period and, at or above a
// high-water mark below the limit, sets MemoryPressure so admission refuses
// new generation work (429) until the figure falls below a lower re-arm mark.
// Each trip and recovery is a log line with the numbers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "core/result.h"
#include "memory/memory_pressure.h"
#include "memory/memory_usage.h"

namespace plimsoll {

// Between the plan's share (--memory-fraction 0.9) and the limit: see docs/reliability.md.
inline constexpr double kDefaultHighWaterFraction = 0.95;
// Hysteresis: the re-arm mark is this share of the limit below the high-water mark.
inline constexpr double kRearmGapFraction = 0.025;

// --memory-high-water: a fraction of the limit, or a size in bytes.
struct HighWaterSetting {
  double fraction = kDefaultHighWaterFraction;  // used when bytes == 0
  int64_t bytes = 0;                            // a size given instead
};

// "0.95" (a number without unit, 0 < f <= 1: a fraction of the limit) or a
// size ("480Mi", "500000000"). Errors name the flag and the accepted forms.
Result<HighWaterSetting> parse_high_water(std::string_view text);

struct BackstopMarks {
  int64_t limit_bytes = 0;
  int64_t high_water_bytes = 0;  // at or above: pressure
  int64_t rearm_bytes = 0;       // below: pressure ends
};

// high water = the setting (at most the limit); re-arm = high water less
// min(kRearmGapFraction x limit, high water / 2).
Result<BackstopMarks> backstop_marks(const HighWaterSetting& setting, int64_t limit_bytes);

struct MemoryWatcherConfig {
  BackstopMarks marks;
  std::string source;            // what is read, for log lines (UsageSource::description)
  double period_seconds = 0.05;  // between readings
  bool trim_heap = true;         // under pressure: malloc_trim(0) at the trip and each second after
};

class MemoryWatcher {
 public:
  // `pressure` must outlive this; the watcher is its only writer.
  MemoryWatcher(MemoryWatcherConfig config, UsageReader read, MemoryPressure& pressure);
  ~MemoryWatcher();
  MemoryWatcher(const MemoryWatcher&) = delete;
  MemoryWatcher& operator=(const MemoryWatcher&) = delete;

  // Reads once now, then every period on the watcher's own thread.
  void start();
  // Stops and joins the thread (also done by the destructor).
  void stop();

  // One reading through the hysteresis (the thread's step; tests call it
  // directly). A failed reading ends pressure: the plan stays the first
  // line, and a backstop that cannot read must not refuse work forever.
  void observe(const Result<int64_t>& usage);

 private:
  using Clock = std::chrono::steady_clock;
  void run();
  void trip(int64_t usage_bytes);
  void recover(int64_t usage_bytes);
  void trim_heap_if_due(bool now);

  MemoryWatcherConfig config_;
  UsageReader read_;
  MemoryPressure& pressure_;
  Clock::time_point tripped_at_{};
  Clock::time_point trimmed_at_{};
  bool read_failing_ = false;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace plimsoll
