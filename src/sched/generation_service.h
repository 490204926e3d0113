// GenerationService: what the HTTP side needs from the engine side — submit
// work (one item or a client batch), cancel it, and read limits and load.
// The scheduler implements it; API tests use a fake.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "sched/request.h"

namespace plimsoll::sched {

// Limits published by /info and used by validation; derived from the memory plan.
struct ServiceLimits {
  std::string model_id;
  std::string model_dtype;
  int64_t max_input_tokens = 0;          // per request
  int64_t max_total_tokens = 0;          // prompt + new tokens, per request
  int64_t max_batch_total_tokens = 0;    // KV tokens the pool holds at once
  int64_t max_batch_prefill_tokens = 0;  // tokens per step
  int64_t max_batch_size = 0;            // sequences per step
  int64_t max_concurrent_requests = 0;   // queue bound (requests)
  int64_t max_queued_tokens = 0;         // queue bound (tokens)
  int64_t max_client_batch_size = 0;     // items per submission (0 = unlimited: split server-side)
  int64_t safe_client_batch_size = 0;    // items that run at once at max_total_tokens each
  int64_t max_stop_sequences = 4;
  int64_t max_best_of = 2;              // TGI's default
  int64_t max_top_n_tokens = 5;
  int64_t vocab_size = 0;
  bool prefix_caching = false;           // shared prompt prefixes are computed once (kv/block_pool.h)
};

// Point-in-time load, for /metrics and Retry-After.
// One tenant's figures (sched/tenants.h), its name from the tenants file.
struct TenantStats {
  std::string name;
  double weight = 1.0;
  int64_t waiting = 0;        // sequences fed in and waiting for blocks
  int64_t running = 0;        // sequences holding blocks
  int64_t kv_blocks = 0;      // blocks they hold
  int64_t served_tokens = 0;  // prompt and generated tokens computed (counter)
  int64_t queued_tokens = 0;  // prompt + max_new tokens of its submissions in flight
  int64_t refusals = 0;       // 429s for its own max_queued_tokens (counter)
  int64_t preemptions = 0;    // its sequences preempted to give another tenant its share (counter)
};

struct ServiceStats {
  int64_t queued_requests = 0;  // items admitted and not yet in the running batch
  int64_t queued_tokens = 0;
  int64_t running_requests = 0;
  int64_t batch_current_size = 0;
  int64_t batch_current_max_tokens = 0;
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_used = 0;
  int64_t preemptions_total = 0;
  int64_t recomputed_tokens_total = 0;  // K/V computed again after preemptions that gave the blocks back
  double generated_tokens_per_second = 0;  // recent drain rate
  int64_t engine_faults_total = 0;         // faults contained on the engine thread (sched/fault.h)
  double admission_fill = 0;               // 0-1, Admission::fill(): at 1 a new submission gets 429
  // Prefix cache: prompt tokens looked up and found (counters), full blocks it
  // holds (in use or not) and of them the reclaimable ones, evictions so far.
  int64_t prefix_cache_queried_tokens = 0;
  int64_t prefix_cache_hit_tokens = 0;
  int64_t prefix_cache_blocks = 0;
  int64_t prefix_cache_reclaimable_blocks = 0;
  int64_t prefix_cache_evictions = 0;
  std::vector<TenantStats> tenants;  // in the tenants table's order (the default first)
};

struct Rejection {
  Error error;               // kInvalidArgument/kOutOfMemory -> 422, kOverloaded -> 429, kUnavailable -> 503
  double retry_after_seconds = 0;  // for 429
  const char* reason = nullptr;    // the rejections metric's label when not the code's own
};

// Rejection::reason of the memory backstop's 429s.
inline constexpr const char* kMemoryPressureReason = "memory_pressure";

// Where a byte reservation meets the memory backstop: at the submission that
// follows (work before one: tokenizing its prompts, rendering its chat, whose
// admission refuses with the backstop's own reason), or now (a request with no
// submission after it: /tokenize).
enum class BackstopCheck { kAtSubmit, kNow };
// Bytes of request memory held by a call that is not a submission (/tokenize)
// or not one yet; given back when the last copy of `hold` is dropped.
struct ByteReservation {
  std::shared_ptr<void> hold;
  std::optional<Rejection> rejection;  // set when refused (429 fits later, 422 never)
  bool ok() const { return !rejection.has_value(); }
};

struct SubmitResult {
  uint64_t ticket = 0;                 // for cancel(), when accepted
  std::optional<Rejection> rejection;  // set when the whole submission was refused
  // The request memory admission charged: given back when the engine is done
  // with the submission and the caller has dropped this (its answer is sent).
  std::shared_ptr<void> charge;
  bool accepted() const { return !rejection.has_value(); }
};

class GenerationService {
 public:
  virtual ~GenerationService() = default;

  // Submits items (a client batch is split and queued server-side, never
  // refused for its length alone). Either every item is accepted — events then
  // arrive on `sink` tagged with the item's index, ending with one final event
  // per item — or the whole submission is rejected before any event.
  virtual SubmitResult submit(std::vector<GenerationRequest> items, EventSink sink) = 0;
  // Cancels every item of a submission still running or queued (the client went
  // away); their KV blocks return to the pool; no further events are sent.
  virtual void cancel(uint64_t ticket) = 0;

  // Holds `bytes` of request memory while a call that is not a submission
  // runs, answered like a submission (429 / 422 / 503). Default: not counted.
  virtual ByteReservation reserve_bytes(int64_t bytes, const std::string& what, BackstopCheck backstop) {
    (void)bytes, (void)what, (void)backstop;
    return {};
  }

  virtual ServiceLimits limits() const = 0;
  virtual ServiceStats stats() const = 0;
  virtual bool ready() const = 0;  // model loaded and warmed
};

}  // namespace plimsoll::sched
