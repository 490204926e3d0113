// Replicas and HPA bounds from the static plan and a target load.
#include "planner/pool_plan.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace plimsoll::planner {
namespace {

// Replicas that hold `in_flight` sequences at `per_replica` each (a hair of
// floating-point noise above a whole number does not buy a replica).
int64_t replicas_for(double in_flight, int64_t per_replica) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(in_flight / static_cast<double>(per_replica) - 1e-9)));
}

}  // namespace

Result<PoolPlan> plan_pool(const StaticPlan& plan, const PoolLoad& load) {
  if (!(load.requests_per_second > 0)) {
    return make_error(ErrorCode::kInvalidArgument, "--requests-per-second must be positive");
  }
  if (!(load.request_seconds > 0)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--request-seconds (the seconds one request of --prompt-tokens + --max-new-tokens takes in a "
                      "full replica) must be positive");
  }
  if (load.peak_requests_per_second != 0 && !(load.peak_requests_per_second >= load.requests_per_second)) {
    return make_error(ErrorCode::kInvalidArgument, "--peak-requests-per-second (" +
                                                       std::to_string(load.peak_requests_per_second) +
                                                       ") must be at least --requests-per-second (" +
                                                       std::to_string(load.requests_per_second) + ")");
  }
  const auto& engine = plan.request.serve.engine;
  PoolPlan p;
  p.load = load;
  if (p.load.peak_requests_per_second == 0) p.load.peak_requests_per_second = 2 * load.requests_per_second;
  p.sequences_per_replica =
      std::min({plan.max_concurrent_sequences, engine.step_seqs, engine.max_concurrent_requests});
  if (p.sequences_per_replica < 1) {
    return make_error(ErrorCode::kOutOfMemory, "the plan holds no full sequence of " +
                                                   std::to_string(plan.sequence_tokens) + " tokens per replica");
  }
  p.sequences_in_flight = load.requests_per_second * load.request_seconds;
  p.peak_sequences_in_flight = p.load.peak_requests_per_second * load.request_seconds;
  p.replicas = replicas_for(p.sequences_in_flight, p.sequences_per_replica);
  p.min_replicas = std::max(p.replicas, kMinPoolReplicas);
  p.max_replicas = std::max(p.min_replicas, replicas_for(p.peak_sequences_in_flight, p.sequences_per_replica));
  return p;
}

}  // namespace plimsoll::planner
