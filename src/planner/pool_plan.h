// The pool behind an inference gateway: how many replicas of one static plan
// carry a target load, and the HPA bounds. Each replica runs at most as many
// sequences at once as its KV pool holds (the memory plan), its batch and its
// request bound allow; Little's law turns requests/s x seconds per request into
// the sequences the pool must hold at once.
#pragma once

#include <cstdint>

#include "core/result.h"
#include "planner/static_plan.h"

namespace plimsoll::planner {

// Replicas the HPA keeps at least, whatever the load: one can be drained (the
// PodDisruptionBudget allows one down) while another serves.
inline constexpr int64_t kMinPoolReplicas = 2;

struct PoolLoad {
  double requests_per_second = 0;       // the steady target (--requests-per-second)
  double peak_requests_per_second = 0;  // the HPA's upper bound (--peak-requests-per-second); 0: twice the target
  double request_seconds = 0;           // one request of P + N in a full replica (--request-seconds)
};

struct PoolPlan {
  PoolLoad load;                     // with the peak filled in
  int64_t sequences_per_replica = 0;  // min(KV pool's full sequences, --max-batch-size, --max-concurrent-requests)
  double sequences_in_flight = 0;     // requests/s x request seconds
  double peak_sequences_in_flight = 0;
  int64_t replicas = 0;              // for the target load
  int64_t min_replicas = 0;          // max(replicas, kMinPoolReplicas)
  int64_t max_replicas = 0;          // for the peak, at least min_replicas
};

// kInvalidArgument naming the flag for a load that is not positive or a peak below the target.
Result<PoolPlan> plan_pool(const StaticPlan& plan, const PoolLoad& load);

}  // namespace plimsoll::planner
