// The backstop's marks, its hysteresis and its thread.
#include "memory/memory_watcher.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/bytes.h"

namespace plimsoll {
namespace {

constexpr auto kTrimEvery = std::chrono::seconds(1);

Error flag_error(std::string_view text, const std::string& why) {
  return make_error(ErrorCode::kInvalidArgument,
                    "--memory-high-water \"" + std::string(text) + "\": " + why +
                        "; give a fraction of the memory limit (0 < f <= 1, e.g. 0.95) or a size (e.g. 480Mi)");
}

// Percent of the limit, for log lines.
double percent(int64_t bytes, int64_t limit_bytes) {
  return limit_bytes > 0 ? 100.0 * static_cast<double>(bytes) / static_cast<double>(limit_bytes) : 0.0;
}

}  // namespace

Result<HighWaterSetting> parse_high_water(std::string_view text) {
  const bool bare = !text.empty() && text.find_first_not_of("0123456789.") == std::string_view::npos;
  if (bare) {
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) return flag_error(text, "not a number");
    if (v <= 0) return flag_error(text, "must be above 0");
    if (v <= 1) return HighWaterSetting{v, 0};
    if (text.find('.') != std::string_view::npos) return flag_error(text, "a fraction must be <= 1");
  }
  auto bytes = parse_bytes(text);
  if (!bytes) return flag_error(text, bytes.error().message);
  if (*bytes <= 0) return flag_error(text, "must be above 0");
  return HighWaterSetting{0, *bytes};
}

Result<BackstopMarks> backstop_marks(const HighWaterSetting& setting, int64_t limit_bytes) {
  if (limit_bytes <= 0) return make_error(ErrorCode::kInvalidArgument, "the memory limit must be positive");
  BackstopMarks m;
  m.limit_bytes = limit_bytes;
  if (setting.bytes > 0) {
    if (setting.bytes > limit_bytes) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--memory-high-water " + format_bytes(setting.bytes) + " is above the memory limit " +
                            format_bytes(limit_bytes) + "; give at most the limit, or a fraction of it");
    }
    m.high_water_bytes = setting.bytes;
  } else {
    if (!(setting.fraction > 0 && setting.fraction <= 1)) {
      return make_error(ErrorCode::kInvalidArgument, "--memory-high-water must be > 0 and <= 1 as a fraction, got " +
                                                         std::to_string(setting.fraction));
    }
    m.high_water_bytes = static_cast<int64_t>(std::floor(static_cast<double>(limit_bytes) * setting.fraction));
  }
  const auto gap = std::min(static_cast<int64_t>(static_cast<double>(limit_bytes) * kRearmGapFraction),
                            m.high_water_bytes / 2);
  m.rearm_bytes = m.high_water_bytes - gap;
  return m;
}

MemoryWatcher::MemoryWatcher(MemoryWatcherConfig config, UsageReader read, MemoryPressure& pressure)
    : config_(std::move(config)), read_(std::move(read)), pressure_(pressure) {
  const BackstopMarks& m = config_.marks;
  pressure_.set_marks(m.high_water_bytes, m.rearm_bytes, m.limit_bytes);
}

MemoryWatcher::~MemoryWatcher() { stop(); }

void MemoryWatcher::start() {
  const BackstopMarks& m = config_.marks;
  spdlog::info("memory backstop: reading {} every {:.0f} ms; new requests refused (429) from {} ({:.1f} % of the "
               "limit {}) until below {}",
               config_.source, config_.period_seconds * 1000, format_bytes(m.high_water_bytes),
               percent(m.high_water_bytes, m.limit_bytes), format_bytes(m.limit_bytes), format_bytes(m.rearm_bytes));
  observe(read_());
  thread_ = std::thread([this] { run(); });
}

void MemoryWatcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MemoryWatcher::run() {
  const auto period = std::chrono::duration<double>(config_.period_seconds);
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, period, [this] { return stop_; })) {
    lock.unlock();
    observe(read_());
    lock.lock();
  }
}

void MemoryWatcher::observe(const Result<int64_t>& usage) {
  if (!usage.ok()) {
    if (!read_failing_) {
      spdlog::warn("memory backstop: cannot read {}: {}; admitting new requests while it cannot", config_.source,
                   usage.error().message);
    }
    read_failing_ = true;
    if (pressure_.active()) recover(pressure_.figures().usage_bytes);
    return;
  }
  if (read_failing_) spdlog::info("memory backstop: reading {} again", config_.source);
  read_failing_ = false;
  const int64_t bytes = *usage;
  pressure_.set_usage(bytes);
  if (!pressure_.active()) {
    if (bytes >= config_.marks.high_water_bytes) trip(bytes);
  } else if (bytes < config_.marks.rearm_bytes) {
    recover(bytes);
  } else {
    trim_heap_if_due(false);
  }
}

void MemoryWatcher::trip(int64_t usage_bytes) {
  const BackstopMarks& m = config_.marks;
  pressure_.set_active(true);
  tripped_at_ = Clock::now();
  spdlog::warn("memory pressure: usage {} ({:.1f} % of the limit {}) reached the high-water mark {}; refusing new "
               "requests (429) until it is below {} (trip {})",
               format_bytes(usage_bytes), percent(usage_bytes, m.limit_bytes), format_bytes(m.limit_bytes),
               format_bytes(m.high_water_bytes), format_bytes(m.rearm_bytes), pressure_.trips());
  trim_heap_if_due(true);
}

void MemoryWatcher::recover(int64_t usage_bytes) {
  const BackstopMarks& m = config_.marks;
  pressure_.set_active(false);
  const double seconds = std::chrono::duration<double>(Clock::now() - tripped_at_).count();
  spdlog::info("memory pressure over after {:.2f} s: usage {} ({:.1f} % of the limit {}), re-arm mark {}, high-water "
               "mark {}; admitting new requests",
               seconds, format_bytes(usage_bytes), percent(usage_bytes, m.limit_bytes), format_bytes(m.limit_bytes),
               format_bytes(m.rearm_bytes), format_bytes(m.high_water_bytes));
}

// Freed heap that glibc keeps in its arenas is still charged to us: hand it
// back, so usage can fall once the memory that caused the trip is freed.
void MemoryWatcher::trim_heap_if_due(bool now) {
  if (!config_.trim_heap) return;
  const Clock::time_point t = Clock::now();
  if (!now && t - trimmed_at_ < kTrimEvery) return;
  trimmed_at_ = t;
  malloc_trim(0);
}

}  // namespace plimsoll
