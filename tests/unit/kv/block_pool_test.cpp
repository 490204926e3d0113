#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>

#include "core/half.h"
#include "kv/block_hash.h"

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

// --- prefix cache ---

std::vector<int32_t> block_of(int32_t first, int64_t n = 4) {
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) t.push_back(first + static_cast<int32_t>(i));
  return t;
}

std::unique_ptr<KvBlockPool> caching_pool(int64_t n_blocks) {
  return std::move(KvBlockPool::create(tiny(), n_blocks, 4, DType::kF32, true)).value();
}

TEST(KvBlockPool, PublishedBlockIsFoundOnlyForItsTokensAndParent) {
  auto pool = caching_pool(4);
  const auto tokens = block_of(10);
  const uint64_t key = chain_block_hash(pool->root_hash(), tokens);
  const int32_t a = *pool->allocate();
  EXPECT_EQ(pool->find_cached(key, -1, tokens), -1);  // not published yet
  ASSERT_TRUE(pool->publish(a, key, -1, tokens));
  EXPECT_EQ(pool->find_cached(key, -1, tokens), a);
  EXPECT_EQ(pool->find_cached(key, -1, block_of(11)), -1);  // same key, other tokens: a miss, never a wrong block
  EXPECT_EQ(pool->find_cached(key, 3, tokens), -1);          // another parent
  EXPECT_EQ(pool->cached_blocks(), 1);
  // A second block with the same key is not published twice.
  const int32_t b = *pool->allocate();
  EXPECT_FALSE(pool->publish(b, key, -1, tokens));
  // A child is found after its parent only.
  const auto next = block_of(20);
  const uint64_t child_key = chain_block_hash(key, next);
  ASSERT_TRUE(pool->publish(b, child_key, a, next));
  EXPECT_EQ(pool->find_cached(child_key, a, next), b);
  EXPECT_EQ(pool->find_cached(child_key, -1, next), -1);
}

TEST(KvBlockPool, SharedBlockReturnsOnlyWhenItsLastUserAndTheCacheLetGo) {
  auto pool = caching_pool(2);
  const auto tokens = block_of(1);
  const uint64_t key = chain_block_hash(pool->root_hash(), tokens);
  const int32_t a = *pool->allocate();
  ASSERT_TRUE(pool->publish(a, key, -1, tokens));
  pool->acquire(pool->find_cached(key, -1, tokens));  // a second user
  EXPECT_EQ(pool->ref_count(a), 2);
  EXPECT_EQ(pool->used_blocks(), 1);  // counted once
  pool->release(a);
  EXPECT_EQ(pool->used_blocks(), 1);  // the other user still holds it
  pool->release(a);
  // No user: free (reclaimable) but still cached and found.
  EXPECT_EQ(pool->free_blocks(), 2);
  EXPECT_EQ(pool->reclaimable_blocks(), 1);
  EXPECT_EQ(pool->find_cached(key, -1, tokens), a);
  pool->acquire(a);  // a hit takes it back out of the reclaimable ones
  EXPECT_EQ(pool->reclaimable_blocks(), 0);
  EXPECT_EQ(pool->free_blocks(), 1);
  pool->release(a);
  // The plain free block goes first; then the cache lets go of `a`.
  const int32_t b = *pool->allocate();
  EXPECT_NE(b, a);
  EXPECT_EQ(pool->evictions(), 0);
  EXPECT_EQ(*pool->allocate(), a);
  EXPECT_EQ(pool->evictions(), 1);
  EXPECT_EQ(pool->cached_blocks(), 0);
  EXPECT_EQ(pool->find_cached(key, -1, tokens), -1);
  EXPECT_FALSE(pool->allocate().has_value());
}

TEST(KvBlockPool, EvictsTheLeastRecentlyReleasedFirst) {
  auto pool = caching_pool(3);
  std::vector<int32_t> blocks;
  std::vector<uint64_t> keys;
  for (int i = 0; i < 3; ++i) {
    blocks.push_back(*pool->allocate());
    keys.push_back(chain_block_hash(pool->root_hash(), block_of(100 * i)));
    ASSERT_TRUE(pool->publish(blocks.back(), keys.back(), -1, block_of(100 * i)));
  }
  pool->release(blocks[2]);
  pool->release(blocks[0]);
  pool->release(blocks[1]);
  EXPECT_EQ(pool->free_blocks(), 3);
  EXPECT_EQ(*pool->allocate(), blocks[2]);
  EXPECT_EQ(*pool->allocate(), blocks[0]);
  EXPECT_EQ(pool->find_cached(keys[1], -1, block_of(100)), blocks[1]);
  EXPECT_EQ(pool->evictions(), 2);
}

TEST(KvBlockPool, ChildOfAnEvictedParentIsUnreachableAndGivesUpItsKey) {
  auto pool = caching_pool(3);
  const auto t0 = block_of(1), t1 = block_of(5);
  const uint64_t k0 = chain_block_hash(pool->root_hash(), t0), k1 = chain_block_hash(k0, t1);
  const int32_t p = *pool->allocate(), c = *pool->allocate();
  ASSERT_TRUE(pool->publish(p, k0, -1, t0));
  ASSERT_TRUE(pool->publish(c, k1, p, t1));
  pool->release(p);  // the parent is released first: evicted first
  pool->release(c);
  const int32_t other = *pool->allocate();  // the plain free block
  EXPECT_EQ(*pool->allocate(), p);          // evicts the parent
  EXPECT_EQ(pool->find_cached(k1, p, t1), -1);  // p is another block now
  // The same prefix computed again: the new chain takes the key from the stale child.
  ASSERT_TRUE(pool->publish(p, k0, -1, t0));
  ASSERT_TRUE(pool->publish(other, k1, p, t1));
  EXPECT_EQ(pool->find_cached(k1, p, t1), other);
  EXPECT_EQ(pool->cached_blocks(), 2);
  EXPECT_EQ(pool->free_blocks(), 1);  // the stale child went back to the plain free blocks
  EXPECT_EQ(*pool->allocate(), c);
  EXPECT_EQ(pool->evictions(), 1);
}

TEST(KvBlockPool, WithoutCachingNothingIsPublishedOrFound) {
  auto pool = std::move(KvBlockPool::create(tiny(), 2, 4)).value();
  const auto tokens = block_of(1);
  const int32_t a = *pool->allocate();
  EXPECT_FALSE(pool->publish(a, 42, -1, tokens));
  EXPECT_EQ(pool->find_cached(42, -1, tokens), -1);
  pool->release(a);
  EXPECT_EQ(pool->free_blocks(), 2);
  EXPECT_EQ(pool->cached_blocks(), 0);
  EXPECT_LT(KvBlockPool::bookkeeping_bytes_per_block(4, false), KvBlockPool::bookkeeping_bytes_per_block(4, true));
}

// Keys whose home slots crowd 12 slots around the end of a 128-slot table (runs wrap).
uint64_t index_key(uint64_t k) { return (k << 20) + 120 + k % 12; }

TEST(BlockIndex, AgreesWithAMapUnderInsertsAndErases) {
  BlockIndex index(64);
  std::map<uint64_t, int32_t> want;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t key = index_key(rng() % 200);
    const int32_t block = static_cast<int32_t>(rng() % 64);
    if (rng() % 2 && want.size() < 64) {
      EXPECT_EQ(index.insert(key, block), want.emplace(key, block).second);
    } else {
      auto it = want.find(key);
      index.erase(key, block);
      if (it != want.end() && it->second == block) want.erase(it);
    }
    ASSERT_EQ(index.size(), static_cast<int64_t>(want.size()));
  }
  for (uint64_t k = 0; k < 200; ++k) {
    const uint64_t key = index_key(k);
    auto it = want.find(key);
    EXPECT_EQ(index.find(key), it == want.end() ? -1 : it->second);
  }
}

TEST(BlockTable, BlocksForTokens) {
  EXPECT_EQ(blocks_for_tokens(0, 16), 0);
  EXPECT_EQ(blocks_for_tokens(1, 16), 1);
  EXPECT_EQ(blocks_for_tokens(16, 16), 1);
  EXPECT_EQ(blocks_for_tokens(17, 16), 2);
}

}  // namespace
}  // namespace plimsoll
