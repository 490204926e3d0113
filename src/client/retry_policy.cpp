// The retry rules (see retry_policy.h); pure functions of the policy, the error,
// the count and the clock, so tests check them without a server.
#include "client/retry_policy.h"

#include <algorithm>
#include <cmath>

namespace plimsoll::client {

int64_t backoff_ms(const RetryPolicy& policy, int64_t retry, std::mt19937_64& rng) {
  const double cap = static_cast<double>(std::max<int64_t>(policy.max_backoff_ms, 0));
  const double base = std::min(cap, static_cast<double>(policy.initial_backoff_ms) *
                                        std::pow(2.0, static_cast<double>(std::min<int64_t>(retry, 62))));
  const double jitter = std::clamp(policy.jitter, 0.0, 1.0);
  std::uniform_real_distribution<double> factor(1.0 - jitter, 1.0);
  return static_cast<int64_t>(std::llround(base * factor(rng)));
}

std::optional<int64_t> retry_wait_ms(const RetryPolicy& policy, const ClientError& error, int64_t retries_so_far,
                                     int64_t elapsed_ms, std::mt19937_64& rng) {
  if (!error.retryable()) return std::nullopt;
  if (error.kind == ErrorKind::kOverloaded && retries_so_far >= policy.max_retries) return std::nullopt;
  const int64_t wait_ms = error.retry_after_seconds > 0
                              ? static_cast<int64_t>(std::ceil(error.retry_after_seconds * 1000.0))
                              : backoff_ms(policy, retries_so_far, rng);
  if (elapsed_ms + wait_ms > policy.deadline_ms) return std::nullopt;
  return wait_ms;
}

}  // namespace plimsoll::client
