// Tests of the Prometheus registry: exposition text, escaping, histogram
// buckets, registration rules and concurrent updates.
#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <array>
#include <thread>
#include <vector>

namespace plimsoll::metrics {
namespace {

TEST(MetricsRegistry, RendersCounterAndGaugeWithHelpAndType) {
  MetricsRegistry r;
  r.counter("jobs_total", "Jobs done.").inc(3);
  r.gauge("queue_depth", "Waiting jobs.").set(-2.5);
  EXPECT_EQ(r.render(),
            "# HELP jobs_total Jobs done.\n"
            "# TYPE jobs_total counter\n"
            "jobs_total 3\n"
            "# HELP queue_depth Waiting jobs.\n"
            "# TYPE queue_depth gauge\n"
            "queue_depth -2.5\n");
}

TEST(MetricsRegistry, LabelledChildrenRenderSortedAndEscaped) {
  MetricsRegistry r;
  CounterFamily& f = r.counter_family("errors_total", "Errors\\by \"kind\"\nsecond line", {"err"});
  f.labels({"b\"q\\x\ny"}).inc();
  f.labels({"a"}).inc(2);
  EXPECT_EQ(r.render(),
            "# HELP errors_total Errors\\\\by \"kind\"\\nsecond line\n"
            "# TYPE errors_total counter\n"
            "errors_total{err=\"a\"} 2\n"
            "errors_total{err=\"b\\\"q\\\\x\\ny\"} 1\n");
}

TEST(MetricsRegistry, EmptyFamilyRendersNothing) {
  MetricsRegistry r;
  r.counter_family("failures_total", "Failures.", {"err"});
  EXPECT_EQ(r.render(), "");
}

TEST(MetricsRegistry, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  MetricsRegistry r;
  const std::array<double, 3> bounds{0.5, 1, 2.5};
  Histogram& h = r.histogram("latency_seconds", "Latency.", bounds);
  for (double v : {0.1, 0.5, 0.7, 3.0, 100.0}) h.observe(v);
  EXPECT_EQ(r.render(),
            "# HELP latency_seconds Latency.\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{le=\"0.5\"} 2\n"
            "latency_seconds_bucket{le=\"1\"} 3\n"
            "latency_seconds_bucket{le=\"2.5\"} 3\n"
            "latency_seconds_bucket{le=\"+Inf\"} 5\n"
            "latency_seconds_sum 104.3\n"
            "latency_seconds_count 5\n");
}

TEST(MetricsRegistry, LabelledHistogramPutsLeLast) {
  MetricsRegistry r;
  const std::array<double, 1> bounds{1};
  r.histogram_family("size_bytes", "Size.", {"part"}, bounds).labels({"kv"}).observe(2);
  std::string text = r.render();
  EXPECT_NE(text.find("size_bytes_bucket{part=\"kv\",le=\"1\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("size_bytes_bucket{part=\"kv\",le=\"+Inf\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("size_bytes_sum{part=\"kv\"} 2\n"), std::string::npos);
}

TEST(MetricsRegistry, SameNameTwiceReturnsTheSameFamily) {
  MetricsRegistry r;
  Counter& a = r.counter("x_total", "X.");
  Counter& b = r.counter("x_total", "X.");
  EXPECT_EQ(&a, &b);
}

TEST(MetricsRegistryDeathTest, ConflictingOrInvalidRegistrationAborts) {
  MetricsRegistry r;
  r.counter("x_total", "X.");
  EXPECT_DEATH(r.gauge("x_total", "X."), "another type");
  EXPECT_DEATH(r.gauge("9bad", "X."), "invalid metric name");
  EXPECT_DEATH(r.counter_family("y_total", "Y.", {"__reserved"}), "invalid label name");
}

TEST(MetricsFormat, Values) {
  EXPECT_EQ(format_value(0), "0");
  EXPECT_EQ(format_value(1e21), "1e+21");
  EXPECT_EQ(format_value(0.1), "0.1");
  EXPECT_EQ(format_value(1.0 / 0.0), "+Inf");
  EXPECT_EQ(format_value(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(format_value(0.0 / 0.0), "NaN");
  EXPECT_EQ(format_value(17179869184.0), "17179869184");
}

TEST(Counter, AdvanceToNeverLowers) {
  Counter c;
  c.advance_to(5);
  c.advance_to(3);
  c.inc(-1);  // ignored: counters only go up
  EXPECT_EQ(c.value(), 5);
}

TEST(Histogram, IgnoresNaN) {
  const std::array<double, 1> bounds{1};
  Histogram h(bounds);
  h.observe(0.0 / 0.0);
  EXPECT_EQ(h.snapshot().count, 0u);
}

TEST(MetricsConcurrency, ThreadsIncrementWithoutLosingUpdates) {
  MetricsRegistry r;
  Counter& c = r.counter("hits_total", "Hits.");
  Gauge& g = r.gauge("level", "Level.");
  const std::array<double, 2> bounds{1, 10};
  Histogram& h = r.histogram("obs", "Observations.", bounds);
  CounterFamily& fam = r.counter_family("by_thread_total", "Per thread.", {"t"});
  constexpr int kThreads = 8;
  constexpr int kIterations = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Counter& mine = fam.labels({std::to_string(t % 2)});
      for (int i = 0; i < kIterations; ++i) {
        c.inc();
        g.add(1);
        h.observe(i % 3 == 0 ? 0.5 : 5.0);
        mine.inc();
        if (i % 1000 == 0) (void)r.render();  // scrapes race with updates
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(c.value(), kThreads * kIterations);
  EXPECT_EQ(g.value(), kThreads * kIterations);
  Histogram::Snapshot s = h.snapshot();
  EXPECT_EQ(s.count, uint64_t{kThreads} * kIterations);
  EXPECT_EQ(fam.labels({"0"}).value() + fam.labels({"1"}).value(), kThreads * kIterations);
}

}  // namespace
}  // namespace plimsoll::metrics
