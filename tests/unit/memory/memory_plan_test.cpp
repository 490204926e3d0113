#include "memory/memory_plan.h"

#include <gtest/gtest.h>

#include "core/bytes.h"

namespace plimsoll {
namespace {

ModelConfig stories260k() {
  ModelConfig c;
  c.dim = 64;
  c.n_layers = 5;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  c.ffn_dim = 172;
  c.vocab_size = 512;
  c.max_seq_len = 512;
  return c;
}

TEST(MemoryPlan, KvBytesPerTokenMatchesTheModelCard) {
  // 5 layers x 2 x 32 floats per token of key/value = 1,280 bytes per token.
  EXPECT_EQ(kv_bytes_per_token(stories260k(), DType::kF32), 1280);
  EXPECT_EQ(kv_bytes_per_token(stories260k(), DType::kF16), 640);
}

TEST(MemoryPlan, PoolIsWhatIsLeftAndEverythingAddsUp) {
  PlanInputs in;
  in.config = stories260k();
  in.weights_bytes = 1056512;
  in.budget_bytes = 256 * kMiB;
  in.max_concurrent_requests = 128;
  auto p = plan_memory(in);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_LE(p->planned_bytes(), in.budget_bytes);
  EXPECT_GT(in.budget_bytes - p->planned_bytes(), -1);
  EXPECT_LT(in.budget_bytes - p->planned_bytes(), p->kv_block_bytes);  // at most one block left over
  EXPECT_EQ(p->kv_block_bytes, 640 * 16);  // f16 KV unless PlanInputs::kv_dtype says f32
  EXPECT_EQ(p->max_batch_total_tokens, p->kv_blocks * 16);
  EXPECT_EQ(p->blocks_per_full_sequence, 32);
  EXPECT_NE(p->table().find("kv block pool"), std::string::npos);
}

TEST(MemoryPlan, RefusesWhenOneFullSequenceCannotFitNamingTheFlags) {
  PlanInputs in;
  in.config = stories260k();
  in.weights_bytes = 1056512;
  in.budget_bytes = 50 * kMiB;  // runtime alone is 48 MiB
  auto p = plan_memory(in);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, ErrorCode::kOutOfMemory);
  EXPECT_NE(p.error().message.find("--memory-limit"), std::string::npos);
  EXPECT_NE(p.error().message.find("weights"), std::string::npos);
}

TEST(MemoryPlan, MaxBatchMemoryCapsThePool) {
  PlanInputs in;
  in.config = stories260k();
  in.budget_bytes = 1 * kGiB;
  in.max_kv_bytes = 4 * kMiB;
  auto p = plan_memory(in);
  ASSERT_TRUE(p.ok());
  EXPECT_LE(p->kv_pool_bytes, 4 * kMiB);
  EXPECT_EQ(p->kv_blocks, 4 * kMiB / (640 * 16));
}

TEST(MemoryPlan, MaxBatchTotalTokensCapsThePoolInWholeBlocks) {
  PlanInputs in;
  in.config = stories260k();
  in.budget_bytes = 1 * kGiB;
  in.max_kv_tokens = 1030;  // 64 blocks of 16 and 6 tokens more: whole blocks only
  auto p = plan_memory(in);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->kv_blocks, 64);
  EXPECT_EQ(p->max_batch_total_tokens, 1024);
  EXPECT_EQ(p->kv_pool_bytes, 64 * 640 * 16);
}

// The workspace is an input (the engine reports it: BatchEngine::workspace_sizes); the plan counts it as given.
TEST(MemoryPlan, CountsTheWorkspaceItIsGiven) {
  PlanInputs in;
  in.config = stories260k();
  in.budget_bytes = 256 * kMiB;
  in.workspace.step_tokens = 8;
  in.workspace.step_seqs = 2;
  in.workspace.hidden_floats = 1000;
  in.workspace.logits_floats = 24;
  in.workspace.matmul_scratch_bytes = 4096;
  auto p = plan_memory(in);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->workspace_bytes, 1024 * 4 + 4096);
  EXPECT_EQ(p->workspace.step_tokens, 8);
  in.workspace.matmul_scratch_bytes += kMiB;
  auto q = plan_memory(in);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->workspace_bytes, p->workspace_bytes + kMiB);
  EXPECT_LE(q->kv_pool_bytes, p->kv_pool_bytes - kMiB + p->kv_block_bytes);
}

}  // namespace
}  // namespace plimsoll

namespace plimsoll {
namespace {

TEST(MemoryPlan, RequestAndTransportMemoryAreNamedTermsOfThePlan) {
  PlanInputs in;
  in.config = stories260k();
  in.weights_bytes = 1056512;
  in.budget_bytes = 256 * kMiB;
  in.max_concurrent_requests = 128;
  in.transport_bytes = 3 * kMiB;
  auto p = plan_memory(in);
  ASSERT_TRUE(p.ok()) << p.error().message;
  // Default: a third of what is left for KV, capped at 64 MiB (here the cap), or
  // every request at max_total_tokens x 256 B when more.
  EXPECT_EQ(p->request_bytes, 64 * kMiB);
  EXPECT_EQ(p->transport_bytes, 3 * kMiB);
  EXPECT_EQ(p->planned_bytes(), p->weights_bytes + p->workspace_bytes + p->request_bytes + p->transport_bytes +
                                    p->runtime_bytes + p->kv_pool_bytes);
  const std::string table = p->table();
  EXPECT_NE(table.find("requests+responses"), std::string::npos) << table;
  EXPECT_NE(table.find("transport"), std::string::npos) << table;
  EXPECT_NE(table.find(format_bytes(p->request_bytes)), std::string::npos) << table;

  // An explicit budget (--max-request-memory) is taken as given, and comes out of the KV pool.
  in.request_budget_bytes = 100 * kMiB;
  auto q = plan_memory(in);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->request_bytes, 100 * kMiB);
  EXPECT_LT(q->kv_pool_bytes, p->kv_pool_bytes);
  EXPECT_LE(p->kv_pool_bytes - q->kv_pool_bytes, 100 * kMiB - p->request_bytes + p->kv_block_bytes);
}

TEST(MemoryPlan, TheGrammarCacheIsALineOfThePlanTakenFromTheKvPool) {
  PlanInputs in;
  in.config = stories260k();
  in.weights_bytes = 1056512;
  in.budget_bytes = 256 * kMiB;
  in.request_budget_bytes = 24 * kMiB;
  auto without = plan_memory(in);
  ASSERT_TRUE(without.ok()) << without.error().message;
  EXPECT_EQ(without->grammar_cache_bytes, 0);
  in.grammar_cache_bytes = 32 * kMiB;
  auto with = plan_memory(in);
  ASSERT_TRUE(with.ok()) << with.error().message;
  EXPECT_EQ(with->grammar_cache_bytes, 32 * kMiB);
  EXPECT_EQ(with->request_bytes, 24 * kMiB);
  EXPECT_EQ(with->planned_bytes(), with->weights_bytes + with->workspace_bytes + with->request_bytes +
                                       with->grammar_cache_bytes + with->transport_bytes + with->runtime_bytes +
                                       with->kv_pool_bytes + with->kv_bookkeeping_bytes);
  EXPECT_LT(with->kv_pool_bytes, without->kv_pool_bytes);
  EXPECT_LE(without->kv_pool_bytes - with->kv_pool_bytes, 32 * kMiB + with->kv_block_bytes);  // whole blocks
  const std::string table = with->table();
  EXPECT_NE(table.find("grammar cache"), std::string::npos) << table;
  EXPECT_NE(table.find("--grammar-cache-memory"), std::string::npos) << table;
  // Too little left for one sequence names the flag.
  in.grammar_cache_bytes = 250 * kMiB;
  auto none = plan_memory(in);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("--grammar-cache-memory"), std::string::npos) << none.error().message;
}

TEST(MemoryPlan, TheDefaultRequestBudgetGrowsWithContextAndRequestsAndFitsSmallPlans) {
  EXPECT_EQ(default_request_budget_bytes(512, 16, kGiB), kDefaultRequestBudgetCapBytes);
  EXPECT_EQ(default_request_budget_bytes(512, 16, 30 * kMiB), 15 * kMiB);
  EXPECT_EQ(default_request_budget_bytes(512, 16, -5), 512 * 16 * kRequestBytesPerToken);
  EXPECT_EQ(default_request_budget_bytes(4096, 128, kGiB), 4096 * 128 * kRequestBytesPerToken);
  // A small plan that fitted before the request term still fits.
  PlanInputs in;
  in.config = stories260k();
  in.config.max_seq_len = 200;
  in.weights_bytes = 1056512;
  in.max_concurrent_requests = 40;
  in.runtime_bytes = 40 * kMiB;
  in.budget_bytes = 51 * kMiB;
  auto p = plan_memory(in);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_GE(p->request_bytes, 40 * 200 * kRequestBytesPerToken);
  EXPECT_LT(p->request_bytes, 6 * kMiB);  // half of what is left for KV
}

}  // namespace
}  // namespace plimsoll
