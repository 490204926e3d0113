#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <set>

namespace plimsoll {
namespace {

ModelConfig tiny() {
  ModelConfig c;
  c.dim = 16;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.ffn_dim = 32;
  c.vocab_size = 300;
  c.max_seq_len = 64;
  return c;
}

TEST(KvBlockPool, AllocatesEveryBlockOnceThenRunsOut) {
  auto pool = KvBlockPool::create(tiny(), 10, 4);
  ASSERT_TRUE(pool.ok());
  std::set<int32_t> got;
  for (int i = 0; i < 10; ++i) {
    auto b = (*pool)->allocate();
    ASSERT_TRUE(b.has_value());
    got.insert(*b);
  }
  EXPECT_EQ(got.size(), 10u);
  EXPECT_FALSE((*pool)->allocate().has_value());
  EXPECT_EQ((*pool)->used_blocks(), 10);
  (*pool)->release(3);
  EXPECT_EQ((*pool)->free_blocks(), 1);
  EXPECT_EQ((*pool)->allocate(), 3);
}

TEST(KvBlockPool, BlocksDoNotOverlap) {
  auto pool = KvBlockPool::create(tiny(), 3, 4);
  ASSERT_TRUE(pool.ok());
  KvBlockPool& p = **pool;
  const int64_t slab = p.block_tokens() * p.kv_dim();  // floats per k (or v) slab
  for (int32_t b = 0; b < 3; ++b) {
    for (int64_t l = 0; l < 2; ++l) {
      for (int64_t i = 0; i < slab; ++i) {
        p.keys(b, l)[i] = static_cast<float>(b * 1000 + l * 100 + 1);
        p.values(b, l)[i] = static_cast<float>(b * 1000 + l * 100 + 2);
      }
    }
  }
  for (int32_t b = 0; b < 3; ++b) {
    for (int64_t l = 0; l < 2; ++l) {
      EXPECT_EQ(p.keys(b, l)[slab - 1], static_cast<float>(b * 1000 + l * 100 + 1));
      EXPECT_EQ(p.values(b, l)[0], static_cast<float>(b * 1000 + l * 100 + 2));
    }
  }
  EXPECT_EQ(p.arena_bytes(), 3 * 2 * 2 * 4 * 8 * 4);
}

TEST(KvBlockPool, RejectsNonsense) {
  EXPECT_FALSE(KvBlockPool::create(tiny(), 0, 16).ok());
  EXPECT_FALSE(KvBlockPool::create(tiny(), 4, 0).ok());
}

TEST(BlockTable, BlocksForTokens) {
  EXPECT_EQ(blocks_for_tokens(0, 16), 0);
  EXPECT_EQ(blocks_for_tokens(1, 16), 1);
  EXPECT_EQ(blocks_for_tokens(16, 16), 1);
  EXPECT_EQ(blocks_for_tokens(17, 16), 2);
}

}  // namespace
}  // namespace plimsoll
