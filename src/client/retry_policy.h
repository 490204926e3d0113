// When to retry and how long to wait: Retry-After honoured, else jittered
// exponential backoff with a cap; limits by retry count and by deadline.
#pragma once

#include <cstdint>
#include <optional>
#include <random>

#include "client/client_error.h"

namespace plimsoll::client {

struct RetryPolicy {
  // Retries of one request after 429 (overloaded). A server that is away
  // (transport errors, 503) is retried until the deadline instead.
  int64_t max_retries = 8;
  // No retry starts later than this after the request's first attempt.
  int64_t deadline_ms = 600'000;
  int64_t initial_backoff_ms = 500;
  int64_t max_backoff_ms = 30'000;
  double jitter = 0.5;  // a backoff wait is uniform in [(1 - jitter) * b, b]
};

// The backoff before retry number `retry` (0 = the first retry):
// b = min(max_backoff, initial * 2^retry), jittered down by up to `jitter`.
int64_t backoff_ms(const RetryPolicy& policy, int64_t retry, std::mt19937_64& rng);

// The wait before the next retry after `error`, or nullopt to give up: not
// retryable, out of retries (429) or past the deadline. `retries_so_far`
// counts this request's earlier retries; `elapsed_ms` runs from its first try.
std::optional<int64_t> retry_wait_ms(const RetryPolicy& policy, const ClientError& error, int64_t retries_so_far,
                                     int64_t elapsed_ms, std::mt19937_64& rng);

}  // namespace plimsoll::client
