#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/half.h"

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

// Fills every block's keys and values with marks of (block, layer) in the
// pool's dtype and reads them back: no slab overlaps another.
template <class T>
void expect_blocks_do_not_overlap(DType dtype, T (*mark)(int)) {
  auto pool = KvBlockPool::create(tiny(), 3, 4, dtype);
  ASSERT_TRUE(pool.ok());
  KvBlockPool& p = **pool;
  ASSERT_EQ(p.dtype(), dtype);
  ASSERT_EQ(p.elem_bytes(), static_cast<int64_t>(sizeof(T)));
  const int64_t slab = p.block_tokens() * p.kv_dim();  // elements per k (or v) slab
  for (int32_t b = 0; b < 3; ++b) {
    for (int64_t l = 0; l < 2; ++l) {
      for (int64_t i = 0; i < slab; ++i) {
        static_cast<T*>(p.keys(b, l))[i] = mark(b * 100 + int(l) * 10 + 1);
        static_cast<T*>(p.values(b, l))[i] = mark(b * 100 + int(l) * 10 + 2);
      }
    }
  }
  for (int32_t b = 0; b < 3; ++b) {
    for (int64_t l = 0; l < 2; ++l) {
      EXPECT_EQ(static_cast<T*>(p.keys(b, l))[slab - 1], mark(b * 100 + int(l) * 10 + 1));
      EXPECT_EQ(static_cast<T*>(p.values(b, l))[0], mark(b * 100 + int(l) * 10 + 2));
      EXPECT_EQ(static_cast<T*>(p.keys(b, l)), static_cast<T*>(p.keys(0, l)) + b * p.block_stride_elems());
    }
  }
  EXPECT_EQ(p.arena_bytes(), 3 * 2 * 2 * 4 * 8 * static_cast<int64_t>(sizeof(T)));
}

TEST(KvBlockPool, BlocksDoNotOverlap) {
  expect_blocks_do_not_overlap<float>(DType::kF32, [](int m) { return static_cast<float>(m); });
  expect_blocks_do_not_overlap<uint16_t>(DType::kF16, [](int m) { return f32_to_f16(static_cast<float>(m)); });
}

TEST(KvBlockPool, RejectsNonsense) {
  EXPECT_FALSE(KvBlockPool::create(tiny(), 0, 16).ok());
  EXPECT_FALSE(KvBlockPool::create(tiny(), 4, 0).ok());
  auto q8 = KvBlockPool::create(tiny(), 4, 16, DType::kQ8_0);
  ASSERT_FALSE(q8.ok());
  EXPECT_NE(q8.error().message.find("f32 or f16, not"), std::string::npos) << q8.error().message;
}

TEST(BlockTable, BlocksForTokens) {
  EXPECT_EQ(blocks_for_tokens(0, 16), 0);
  EXPECT_EQ(blocks_for_tokens(1, 16), 1);
  EXPECT_EQ(blocks_for_tokens(16, 16), 1);
  EXPECT_EQ(blocks_for_tokens(17, 16), 2);
}

}  // namespace
}  // namespace plimsoll
