#include "memory/memory_watcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/bytes.h"

namespace plimsoll {
namespace {

constexpr int64_t kLimit = 512 * kMiB;

// Marks of 400 MiB / 380 MiB under 512 MiB, fed by hand.
struct Fixture {
  MemoryPressure pressure;
  MemoryWatcher watcher;
  static MemoryWatcherConfig config() {
    MemoryWatcherConfig c;
    c.marks = BackstopMarks{kLimit, 400 * kMiB, 380 * kMiB};
    c.source = "fake";
    c.trim_heap = false;
    return c;
  }
  Fixture() : watcher(config(), [] { return Result<int64_t>(int64_t{0}); }, pressure) {}
};

TEST(HighWater, ParsesAFractionOrASize) {
  auto f = parse_high_water("0.95");
  ASSERT_TRUE(f.ok());
  EXPECT_DOUBLE_EQ(f->fraction, 0.95);
  EXPECT_EQ(f->bytes, 0);
  auto one = parse_high_water("1");
  ASSERT_TRUE(one.ok());
  EXPECT_DOUBLE_EQ(one->fraction, 1.0);
  auto mi = parse_high_water("480Mi");
  ASSERT_TRUE(mi.ok());
  EXPECT_EQ(mi->bytes, 480 * kMiB);
  auto plain = parse_high_water("500000000");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->bytes, 500000000);
  for (const char* bad : {"0", "1.5", "", "lots", "-3", "0.0"}) {
    auto r = parse_high_water(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("--memory-high-water"), std::string::npos) << r.error().message;
  }
}

TEST(HighWater, MarksBelowTheLimitWithAGap) {
  auto m = backstop_marks(HighWaterSetting{}, kLimit);  // default 0.95
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->limit_bytes, kLimit);
  EXPECT_EQ(m->high_water_bytes, static_cast<int64_t>(kLimit * 0.95));
  EXPECT_EQ(m->rearm_bytes, m->high_water_bytes - static_cast<int64_t>(kLimit * kRearmGapFraction));
  // A small mark keeps a re-arm mark above zero.
  auto small = backstop_marks(HighWaterSetting{0, 10 * kMiB}, kGiB);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->high_water_bytes, 10 * kMiB);
  EXPECT_EQ(small->rearm_bytes, 5 * kMiB);
  auto above = backstop_marks(HighWaterSetting{0, 600 * kMiB}, kLimit);
  ASSERT_FALSE(above.ok());
  EXPECT_NE(above.error().message.find("600.00 MiB is above the memory limit 512.00 MiB"), std::string::npos)
      << above.error().message;
}

TEST(MemoryWatcher, TripsAtTheMarkNotBelow) {
  Fixture t;
  t.watcher.observe(399 * kMiB);
  EXPECT_FALSE(t.pressure.active());
  EXPECT_EQ(t.pressure.figures().usage_bytes, 399 * kMiB);
  t.watcher.observe(400 * kMiB);
  EXPECT_TRUE(t.pressure.active());
  EXPECT_EQ(t.pressure.trips(), 1);
  const MemoryPressure::Figures f = t.pressure.figures();
  EXPECT_EQ(f.usage_bytes, 400 * kMiB);
  EXPECT_EQ(f.high_water_bytes, 400 * kMiB);
  EXPECT_EQ(f.rearm_bytes, 380 * kMiB);
  EXPECT_EQ(f.limit_bytes, kLimit);
}

TEST(MemoryWatcher, HysteresisHoldsUntilBelowTheRearmMark) {
  Fixture t;
  t.watcher.observe(450 * kMiB);
  ASSERT_TRUE(t.pressure.active());
  for (int64_t mib : {399, 390, 380}) {  // below the high-water mark, not below the re-arm mark
    t.watcher.observe(mib * kMiB);
    EXPECT_TRUE(t.pressure.active()) << mib;
  }
  t.watcher.observe(379 * kMiB);
  EXPECT_FALSE(t.pressure.active());
  EXPECT_EQ(t.pressure.trips(), 1);
  t.watcher.observe(395 * kMiB);  // between the marks, coming from below: no trip
  EXPECT_FALSE(t.pressure.active());
  t.watcher.observe(401 * kMiB);
  EXPECT_TRUE(t.pressure.active());
  EXPECT_EQ(t.pressure.trips(), 2);
  t.watcher.observe(402 * kMiB);  // still above: the same trip
  EXPECT_EQ(t.pressure.trips(), 2);
}

TEST(MemoryWatcher, AnUnreadableFigureEndsPressure) {
  Fixture t;
  t.watcher.observe(450 * kMiB);
  ASSERT_TRUE(t.pressure.active());
  t.watcher.observe(Result<int64_t>(make_error(ErrorCode::kIo, "cannot open memory.current")));
  EXPECT_FALSE(t.pressure.active());
  t.watcher.observe(Result<int64_t>(make_error(ErrorCode::kIo, "cannot open memory.current")));
  EXPECT_FALSE(t.pressure.active());
  t.watcher.observe(450 * kMiB);  // readable again and still high: a new trip
  EXPECT_TRUE(t.pressure.active());
  EXPECT_EQ(t.pressure.trips(), 2);
}

// The thread: a fake source whose figure the test moves; the test waits for
// each state with a deadline.
bool wait_for(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return done();
}

TEST(MemoryWatcher, ThreadTripsAndRecoversFromItsSource) {
  std::atomic<int64_t> usage{100 * kMiB};
  std::atomic<int> reads{0};
  MemoryPressure pressure;
  MemoryWatcherConfig c = Fixture::config();
  c.period_seconds = 0.005;
  c.trim_heap = true;
  MemoryWatcher w(c, [&] { ++reads; return Result<int64_t>(usage.load()); }, pressure);
  w.start();
  EXPECT_GE(reads.load(), 1);  // one reading before start() returns
  EXPECT_EQ(pressure.figures().usage_bytes, 100 * kMiB);
  EXPECT_FALSE(pressure.active());
  usage = 420 * kMiB;
  ASSERT_TRUE(wait_for([&] { return pressure.active(); }));
  EXPECT_EQ(pressure.trips(), 1);
  usage = 200 * kMiB;
  ASSERT_TRUE(wait_for([&] { return !pressure.active(); }));
  EXPECT_TRUE(wait_for([&] { return pressure.figures().usage_bytes == 200 * kMiB; }));
  w.stop();
  const int after_stop = reads.load();
  w.stop();  // twice is fine
  EXPECT_EQ(reads.load(), after_stop);
  EXPECT_EQ(pressure.trips(), 1);
}

}  // namespace
}  // namespace plimsoll
