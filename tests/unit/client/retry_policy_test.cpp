// The retry rules without a server: jittered exponential backoff within its
// bounds, Retry-After honoured, 422 never retried, limits by count and deadline.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "client/retry_policy.h"

namespace plimsoll::client {
namespace {

ClientError error(ErrorKind kind, double retry_after_seconds = 0) {
  ClientError e{kind, "test"};
  e.retry_after_seconds = retry_after_seconds;
  return e;
}

TEST(Backoff, DoublesUpToTheCapWithJitterBounds) {
  RetryPolicy p;
  p.initial_backoff_ms = 100;
  p.max_backoff_ms = 1000;
  p.jitter = 0.5;
  std::mt19937_64 rng(7);
  for (int64_t retry = 0; retry < 70; ++retry) {
    const double nominal = std::min(1000.0, 100.0 * std::pow(2.0, std::min<double>(retry, 62)));
    for (int trial = 0; trial < 200; ++trial) {
      const int64_t wait = backoff_ms(p, retry, rng);
      EXPECT_GE(wait, static_cast<int64_t>(nominal * 0.5) - 1) << retry;
      EXPECT_LE(wait, static_cast<int64_t>(nominal) + 1) << retry;
    }
  }
}

TEST(Backoff, JitterSpreadsTheWaits) {
  RetryPolicy p;
  p.initial_backoff_ms = 1000;
  p.jitter = 0.5;
  std::mt19937_64 rng(11);
  int64_t low = 1'000'000, high = 0;
  for (int i = 0; i < 1000; ++i) {
    const int64_t w = backoff_ms(p, 0, rng);
    low = std::min(low, w);
    high = std::max(high, w);
  }
  EXPECT_LT(low, 600);
  EXPECT_GT(high, 900);
  p.jitter = 0;
  EXPECT_EQ(backoff_ms(p, 2, rng), 4000);
}

TEST(RetryWait, RetryAfterIsHonouredExactly) {
  RetryPolicy p;
  std::mt19937_64 rng(1);
  EXPECT_EQ(retry_wait_ms(p, error(ErrorKind::kOverloaded, 3), 0, 0, rng), 3000);
  EXPECT_EQ(retry_wait_ms(p, error(ErrorKind::kUnavailable, 0.25), 5, 0, rng), 250);
}

TEST(RetryWait, ValidationGenerationAndProtocolAreNotRetried) {
  RetryPolicy p;
  std::mt19937_64 rng(1);
  for (ErrorKind k : {ErrorKind::kValidation, ErrorKind::kGeneration, ErrorKind::kProtocol, ErrorKind::kHttp,
                      ErrorKind::kInput}) {
    EXPECT_FALSE(retry_wait_ms(p, error(k, 1), 0, 0, rng).has_value()) << error_kind_name(k);
  }
}

TEST(RetryWait, OverloadedStopsAfterMaxRetriesServerAwayAtTheDeadline) {
  RetryPolicy p;
  p.max_retries = 3;
  p.deadline_ms = 10'000;
  p.max_backoff_ms = 1000;
  std::mt19937_64 rng(1);
  EXPECT_TRUE(retry_wait_ms(p, error(ErrorKind::kOverloaded), 2, 0, rng).has_value());
  EXPECT_FALSE(retry_wait_ms(p, error(ErrorKind::kOverloaded), 3, 0, rng).has_value());
  // A server that went away: not counted, bounded by the deadline.
  EXPECT_TRUE(retry_wait_ms(p, error(ErrorKind::kTransport), 50, 8'000, rng).has_value());
  EXPECT_FALSE(retry_wait_ms(p, error(ErrorKind::kTransport), 50, 9'500, rng).has_value());
  EXPECT_FALSE(retry_wait_ms(p, error(ErrorKind::kUnavailable, 5), 0, 6'000, rng).has_value());
}

}  // namespace
}  // namespace plimsoll::client
