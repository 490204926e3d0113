// The resident-set prediction: runtime base + weights + workspace + KV blocks
// written, never less than the warm-up's blocks, never more than the pool.
#include "memory/resident_model.h"

#include <gtest/gtest.h>

#include "core/bytes.h"

namespace plimsoll {
namespace {

MemoryPlan stories_plan() {
  PlanInputs in;
  in.config.dim = 64;
  in.config.n_layers = 5;
  in.config.n_heads = 8;
  in.config.n_kv_heads = 4;
  in.config.ffn_dim = 172;
  in.config.vocab_size = 512;
  in.config.max_seq_len = 512;
  in.weights_bytes = 1056512;
  in.max_total_tokens = 272;
  in.workspace.step_tokens = 512;  // serve's defaults (the engine fills the buffer sizes)
  in.workspace.step_seqs = 64;
  in.budget_bytes = 256 * kMiB;
  auto p = plan_memory(in);
  EXPECT_TRUE(p.ok());
  return *p;
}

TEST(ResidentModel, CountsBaseWeightsWorkspaceAndBlocksWritten) {
  const MemoryPlan p = stories_plan();
  const auto r = predict_resident(p, 10 * kMiB, 100);
  EXPECT_EQ(r.kv_blocks, 100);
  EXPECT_EQ(r.kv_bytes, 100 * p.kv_block_bytes);
  EXPECT_EQ(r.total_bytes(), 10 * kMiB + p.weights_bytes + p.workspace_bytes + 100 * p.kv_block_bytes);
}

TEST(ResidentModel, TheWarmUpsBlocksAreAFloorAndThePoolACeiling) {
  const MemoryPlan p = stories_plan();
  // T = 512, B = 64: one sequence of 512 - 63 = 449 tokens = 29 blocks of 16.
  EXPECT_EQ(warm_up_kv_blocks(p), 29);
  EXPECT_EQ(predict_resident(p, 0, 1).kv_blocks, 29);
  EXPECT_EQ(predict_resident(p, 0, p.kv_blocks * 2).kv_blocks, p.kv_blocks);
}

TEST(ResidentModel, SequencesRoundUpToWholeBlocksEach) {
  const MemoryPlan p = stories_plan();
  EXPECT_EQ(kv_blocks_for_sequences(p, 4, 272), 4 * 17);
  EXPECT_EQ(kv_blocks_for_sequences(p, 3, 17), 6);
  EXPECT_EQ(predict_resident_for_tokens(p, 0, 1000).kv_blocks, 63);
}

TEST(ResidentModel, RuntimePartsMatchServe) {
  EXPECT_EQ(planned_runtime_bytes(40 * kMiB, 1000), 72 * kMiB + 1000);
}

}  // namespace
}  // namespace plimsoll
