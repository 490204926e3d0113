// The pool for a target load: replicas from Little's law over the plan's
// sequences per replica, the HPA bounds (target, peak, the floor of 2), and
// errors that name the flag.
#include "planner/pool_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "planner/report.h"
#include "planner_fixture.h"

namespace plimsoll::planner {
namespace {

StaticPlan stories_plan() {
  auto p = make_static_plan(testing::stories_request());
  EXPECT_TRUE(p.ok());
  return *p;
}

TEST(PoolPlan, ReplicasHoldRequestsPerSecondTimesSecondsAtThePlansConcurrency) {
  const StaticPlan plan = stories_plan();
  ASSERT_GT(plan.max_concurrent_sequences, 0);
  const int64_t per = std::min({plan.max_concurrent_sequences, plan.request.serve.engine.step_seqs,
                                plan.request.serve.engine.max_concurrent_requests});
  // Exactly 3 replicas' worth in flight, then one sequence more.
  PoolLoad load{static_cast<double>(3 * per), 0, 1.0};
  auto pool = plan_pool(plan, load);
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  EXPECT_EQ(pool->sequences_per_replica, per);
  EXPECT_DOUBLE_EQ(pool->sequences_in_flight, 3.0 * per);
  EXPECT_EQ(pool->replicas, 3);
  EXPECT_EQ(pool->min_replicas, 3);
  EXPECT_EQ(pool->max_replicas, 6);  // the default peak: twice the target
  EXPECT_DOUBLE_EQ(pool->load.peak_requests_per_second, 6.0 * per);
  load.requests_per_second = 3 * per + 1;
  EXPECT_EQ(plan_pool(plan, load)->replicas, 4);
}

TEST(PoolPlan, TheBatchAndRequestBoundsCapWhatAReplicaRuns) {
  StaticPlan plan = stories_plan();
  plan.request.serve.engine.step_seqs = 3;  // --max-batch-size 3, below the KV pool's sequences
  ASSERT_GT(plan.max_concurrent_sequences, 3);
  auto pool = plan_pool(plan, PoolLoad{2.0, 2.0, 4.5});  // 9 in flight at 3 a replica
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(pool->sequences_per_replica, 3);
  EXPECT_EQ(pool->replicas, 3);
  EXPECT_EQ(pool->max_replicas, 3);  // the peak given equals the target
}

TEST(PoolPlan, TheHpaKeepsTwoReplicasForALightLoad) {
  auto pool = plan_pool(stories_plan(), PoolLoad{0.1, 0, 1.0});
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ(pool->replicas, 1);
  EXPECT_EQ(pool->min_replicas, kMinPoolReplicas);
  EXPECT_EQ(pool->max_replicas, kMinPoolReplicas);
}

TEST(PoolPlan, BadLoadsNameTheFlag) {
  const StaticPlan plan = stories_plan();
  auto no_rate = plan_pool(plan, PoolLoad{0, 0, 1.0});
  ASSERT_FALSE(no_rate.ok());
  EXPECT_NE(no_rate.error().message.find("--requests-per-second must be positive"), std::string::npos);
  auto no_seconds = plan_pool(plan, PoolLoad{5, 0, 0});
  ASSERT_FALSE(no_seconds.ok());
  EXPECT_NE(no_seconds.error().message.find("--request-seconds"), std::string::npos);
  auto low_peak = plan_pool(plan, PoolLoad{5, 4, 1.0});
  ASSERT_FALSE(low_peak.ok());
  EXPECT_NE(low_peak.error().message.find("--peak-requests-per-second (4.0"), std::string::npos)
      << low_peak.error().message;
}

TEST(PoolPlan, TheReportCarriesThePoolAndTheHpaUsesItsBounds) {
  PlanReport rep;
  rep.plan = stories_plan();
  rep.limit_source = "--memory-limit";
  rep.pool = *plan_pool(rep.plan, PoolLoad{static_cast<double>(5 * rep.plan.max_concurrent_sequences), 0, 1.0});
  const nlohmann::json j = report_json(rep);
  EXPECT_EQ(j["pool"]["replicas"], rep.pool->replicas);
  EXPECT_EQ(j["pool"]["hpa"]["min_replicas"], rep.pool->min_replicas);
  EXPECT_EQ(j["kubernetes"]["hpa"]["spec"]["minReplicas"], rep.pool->min_replicas);
  EXPECT_EQ(j["kubernetes"]["hpa"]["spec"]["maxReplicas"], rep.pool->max_replicas);
  const std::string text = report_text(rep);
  EXPECT_NE(text.find("pool (inference gateway):"), std::string::npos) << text;
  EXPECT_NE(text.find("minReplicas: " + std::to_string(rep.pool->min_replicas) + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("maxReplicas: " + std::to_string(rep.pool->max_replicas) + "\n"), std::string::npos) << text;
  rep.pool.reset();  // without a target load: the old bounds
  EXPECT_EQ(report_json(rep)["kubernetes"]["hpa"]["spec"]["minReplicas"], 1);
  EXPECT_FALSE(report_json(rep).contains("pool"));
}

}  // namespace
}  // namespace plimsoll::planner
