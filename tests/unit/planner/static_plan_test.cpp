// The static plan is serve's plan_serve_memory read for sequences of P + N, and the
// reverse search finds the smallest limit that holds C of them.
#include "api/body_budget.h"
#include "planner/static_plan.h"

#include <gtest/gtest.h>

#include "memory/resident_model.h"
#include "planner_fixture.h"

namespace plimsoll::planner {
namespace {

TEST(StaticPlan, IsServesPlanForTheseSettings) {
  const PlanRequest r = testing::stories_request();
  auto p = make_static_plan(r);
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto direct = plan_serve_memory(serve_config_for(r), serve_model_facts(r), 64, p->budget_bytes);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(p->plan.table(), direct->table());
  EXPECT_EQ(p->plan.kv_blocks, direct->kv_blocks);
  EXPECT_EQ(p->budget_bytes, static_cast<int64_t>(256.0 * kMiB * 0.9));
  EXPECT_EQ(p->sequence_tokens, 272);
  EXPECT_EQ(p->plan.runtime_bytes, 20 * kMiB + kRuntimeMarginBytes);
  // The HTTP transport's worst case: its own term.
  EXPECT_EQ(p->plan.transport_bytes, api::transport_worst_case_bytes(r.serve.api, r.serve.engine.max_concurrent_requests));
  EXPECT_GT(p->plan.request_bytes, 0);
  EXPECT_LE(p->plan.request_bytes, kDefaultRequestBudgetCapBytes);
  EXPECT_EQ(p->max_concurrent_sequences, p->plan.kv_blocks / 17);
  EXPECT_EQ(p->safe_client_batch_size, p->max_concurrent_sequences);
  EXPECT_EQ(p->plan.max_batch_total_tokens, p->plan.kv_blocks * 16);
}

TEST(StaticPlan, MoreMemoryHoldsMoreSequences) {
  auto small = make_static_plan(testing::stories_request(256 * kMiB));
  auto large = make_static_plan(testing::stories_request(kGiB));
  ASSERT_TRUE(small.ok() && large.ok());
  EXPECT_GT(large->max_concurrent_sequences, 4 * small->max_concurrent_sequences);
}

TEST(StaticPlan, RefusesWithServesMessageWhenNothingFits) {
  auto p = make_static_plan(testing::stories_request(64 * kMiB));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, ErrorCode::kOutOfMemory);
  EXPECT_NE(p.error().message.find("--memory-limit"), std::string::npos);
}

TEST(StaticPlan, RefusesSequencesLongerThanTheContext) {
  PlanRequest r = testing::stories_request();
  r.max_new_tokens = 600;
  auto p = make_static_plan(r);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, ErrorCode::kInvalidArgument);
}

TEST(ReverseSearch, FindsTheSmallestLimitInWholeMiB) {
  for (int64_t c : {1, 7, 100, 1000}) {
    auto limit = required_memory_limit(testing::stories_request(), c);
    ASSERT_TRUE(limit.ok()) << limit.error().message;
    EXPECT_EQ(*limit % kMiB, 0);
    auto at = make_static_plan(testing::stories_request(*limit));
    ASSERT_TRUE(at.ok());
    EXPECT_GE(at->max_concurrent_sequences, c);
    auto below = make_static_plan(testing::stories_request(*limit - kMiB));
    EXPECT_TRUE(!below.ok() || below->max_concurrent_sequences < c) << c;
  }
}

TEST(ReverseSearch, AgreesWithTheForwardPlan) {
  auto forward = make_static_plan(testing::stories_request(512 * kMiB));
  ASSERT_TRUE(forward.ok());
  auto limit = required_memory_limit(testing::stories_request(), forward->max_concurrent_sequences);
  ASSERT_TRUE(limit.ok());
  EXPECT_LE(*limit, 512 * kMiB);
  EXPECT_GT(*limit, 500 * kMiB);
}

TEST(ReverseSearch, RejectsZero) {
  EXPECT_FALSE(required_memory_limit(testing::stories_request(), 0).ok());
}

}  // namespace
}  // namespace plimsoll::planner
