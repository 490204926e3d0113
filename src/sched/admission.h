// Admission: the one owner of what may enter the engine — the limits (per
// item: tokens, KV blocks; in flight: submissions, tokens, request bytes),
// tickets, and the counts in flight. A submission is checked and charged
// before any work starts: 422 when it can never fit (with the numbers), 429
// with Retry-After when it does not fit now, 503 while shutting down.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "sched/generation_service.h"
#include "sched/request_cost.h"
#include "sched/tenants.h"

namespace plimsoll::sched {

struct AdmissionLimits {
  int64_t max_input_tokens = 0;         // per item
  int64_t max_total_tokens = 0;         // per item: prompt + new tokens
  int64_t kv_blocks = 0;                // the whole pool
  int64_t block_tokens = 16;
  int64_t max_concurrent_requests = 0;  // submissions in flight
  int64_t max_queued_tokens = 0;        // tokens of every item in flight
  int64_t request_budget_bytes = 0;     // request memory in flight (request_cost.h); the plan's request term
  CostModel cost;
  // The cgroup backstop: a 429 while measured usage is above its mark (null: none).
  std::function<std::optional<Rejection>()> memory_pressure;
  TenantTable tenants;                  // their max_queued_tokens (empty: one default tenant)
};

// A submission let in: its ticket and what it was charged. The bytes are
// given back when the last copy of `charge` is dropped (the engine's and the
// HTTP side's); the request and token counts at release().
struct Admitted {
  uint64_t ticket = 0;
  int64_t tokens = 0;
  int64_t bytes = 0;
  std::shared_ptr<void> charge;
};

class Admission {
 public:
  explicit Admission(AdmissionLimits limits);

  const AdmissionLimits& limits() const { return limits_; }

  // Checks and charges a submission. `drain_tokens_per_second` (the recent
  // drain rate) sizes Retry-After.
  std::variant<Admitted, Rejection> admit(const std::vector<GenerationRequest>& items,
                                          double drain_tokens_per_second);
  // The engine is done with the submission (done or cancelled): its request
  // and token counts are released, once.
  void release(uint64_t ticket);
  // Holds bytes of request memory for a call that is not a submission
  // (/tokenize) or not one yet (prompts being tokenized).
  ByteReservation reserve(int64_t bytes, const std::string& what, BackstopCheck backstop);

  void stop_accepting();
  // How full admission is, 0-1: the largest share of its in-flight bounds in use
  // (submissions, tokens, request bytes); 1 while it refuses every submission
  // (memory backstop, shutting down). At 1 a new submission is answered 429.
  double fill() const;
  int64_t in_flight() const;
  int64_t in_flight_bytes() const;
  // Per tenant: tokens in flight now, and submissions refused for its own
  // max_queued_tokens since start.
  std::vector<int64_t> tenant_tokens() const;
  std::vector<int64_t> tenant_refusals() const;

 private:
  // Per-item checks that need no lock (422).
  std::optional<Rejection> check_items(const std::vector<GenerationRequest>& items) const;
  // Under mu_: 503 (shutting down), 422 (more than the whole budget), memory
  // pressure (429), 429 (not now) for `bytes` more of request memory.
  std::optional<Rejection> check_bytes(int64_t bytes, const std::string& what, double retry_after,
                                       bool check_pressure = true) const;
  // Under mu_: 429 when the submission or token bound is reached.
  std::optional<Rejection> check_counts(int64_t tokens, double retry_after) const;
  // Under mu_: Retry-After from the tokens in flight and the drain rate (1-60 s).
  double retry_after_seconds(double drain_tokens_per_second) const;
  // Under mu_: the single place a refusal by measured memory goes (the
  // cgroup backstop, AdmissionLimits::memory_pressure), after the 422s.
  std::optional<Rejection> memory_pressure_refusal() const;
  void give_back_bytes(int64_t bytes);
  // Under mu_: takes `bytes`; the returned handle gives them back.
  std::shared_ptr<void> take_bytes(int64_t bytes);

  AdmissionLimits limits_;
  mutable std::mutex mu_;
  bool accepting_ = true;
  uint64_t next_ticket_ = 1;
  int64_t in_flight_ = 0;         // submissions admitted and not over
  int64_t in_flight_tokens_ = 0;  // prompt + max_new_tokens of every item in flight
  int64_t in_flight_bytes_ = 0;   // charges of submissions and reservations
  struct Active {
    int64_t tokens = 0;
    int32_t tenant = 0;
  };
  std::unordered_map<uint64_t, Active> active_;  // ticket -> its charge
  std::vector<int64_t> tenant_tokens_;    // [tenants] tokens in flight
  std::vector<int64_t> tenant_refusals_;  // [tenants] 429s for the tenant's own cap
};

}  // namespace plimsoll::sched
