// Each tenant's share of a plan: weights, caps, and the scheduler's own cap in blocks.
#include <gtest/gtest.h>

#include "planner/tenant_shares.h"

namespace plimsoll::planner {
namespace {

MemoryPlan pool_of(int64_t kv_blocks, int64_t blocks_per_sequence) {
  MemoryPlan p;
  p.kv_blocks = kv_blocks;
  p.blocks_per_full_sequence = blocks_per_sequence;
  p.max_total_tokens = blocks_per_sequence * 16;
  return p;
}

sched::TenantLimits tenant(const std::string& name, double weight) {
  sched::TenantLimits t;
  t.name = name;
  t.weight = weight;
  return t;
}

TEST(TenantShares, SplitsThePoolByWeightWithinEachCap) {
  sched::TenantTable table = {tenant("web", 3), tenant("batch", 1)};
  table[1].max_kv_share = 0.5;
  table[1].max_sequences = 2;
  table[1].max_queued_tokens = 1000;
  const std::vector<TenantShare> s = tenant_shares(pool_of(100, 8), table);  // 12 full sequences
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].name, "web");
  EXPECT_DOUBLE_EQ(s[0].share, 0.75);
  EXPECT_EQ(s[0].kv_blocks_at_share, 75);
  EXPECT_EQ(s[0].sequences_at_share, 9);
  EXPECT_EQ(s[0].cap_blocks, 0);
  EXPECT_EQ(s[1].kv_blocks_at_share, 25);
  EXPECT_EQ(s[1].sequences_at_share, 2);  // 3 at its share, 2 by max_sequences
  EXPECT_EQ(s[1].cap_blocks, 50);
  EXPECT_EQ(s[1].sequences_at_cap, 6);
  const nlohmann::json j = tenant_shares_json(s);
  EXPECT_FALSE(j[0].contains("max_kv_share"));
  EXPECT_EQ(j[1]["sequences_at_cap"], 6);
  EXPECT_EQ(j[1]["max_queued_tokens"], 1000);
  const std::string text = tenant_shares_text(s, 128);
  EXPECT_NE(text.find("sequences of 128 tokens"), std::string::npos) << text;
  EXPECT_NE(text.find("max_kv_share 0.5 (6 sequences)"), std::string::npos) << text;
}

TEST(TenantShares, ACapBelowOneSequenceHoldsNone) {
  sched::TenantTable table = {tenant("default", 1)};
  table[0].max_kv_share = 0.001;
  const std::vector<TenantShare> s = tenant_shares(pool_of(100, 8), table);
  EXPECT_EQ(s[0].cap_blocks, 1);  // the scheduler's cap holds at least one block
  EXPECT_EQ(s[0].sequences_at_cap, 0);
}

}  // namespace
}  // namespace plimsoll::planner
