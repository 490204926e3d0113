// Chunk size from /info and the user's cap; chunks are consecutive, never
// larger than the size, and never mix parameter sets.
#include <gtest/gtest.h>

#include "client/chunking.h"

namespace plimsoll::client {
namespace {

ServerInfo info(int64_t safe, int64_t max_client) {
  ServerInfo i;
  i.safe_client_batch_size = safe;
  i.max_client_batch_size = max_client;
  return i;
}

TEST(ChunkSize, ServerSafeSizeOrUserCapWhicheverIsSmaller) {
  EXPECT_EQ(choose_chunk_size(info(8, 0), 0), 8);
  EXPECT_EQ(choose_chunk_size(info(8, 0), 3), 3);
  EXPECT_EQ(choose_chunk_size(info(8, 0), 100), 8);
}

TEST(ChunkSize, NeverAboveMaxClientBatchSize) {
  EXPECT_EQ(choose_chunk_size(info(32, 4), 0), 4);
  EXPECT_EQ(choose_chunk_size(info(0, 4), 0), 4);  // a plain TGI: its max_client_batch_size
  EXPECT_EQ(choose_chunk_size(info(0, 4), 2), 2);
}

TEST(ChunkSize, WithoutServerLimitsTheUserCapElseOne) {
  EXPECT_EQ(choose_chunk_size(std::nullopt, 0), 1);
  EXPECT_EQ(choose_chunk_size(std::nullopt, 16), 16);
  EXPECT_EQ(choose_chunk_size(info(0, 0), 0), 1);
  EXPECT_EQ(choose_chunk_size(info(0, 0), 5), 5);
}

TEST(PlanChunks, ConsecutiveCoverEveryItemOnceInOrder) {
  std::vector<Chunk> chunks = plan_chunks(index_range(0, 2048), 64);
  ASSERT_EQ(chunks.size(), 32u);
  size_t next = 0;
  for (const Chunk& c : chunks) {
    EXPECT_EQ(c.size(), 64u);
    for (size_t i : c) EXPECT_EQ(i, next++);
  }
  chunks = plan_chunks(index_range(5, 10), 4);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0], (Chunk{5, 6, 7, 8}));
  EXPECT_EQ(chunks[2], (Chunk{13, 14}));
  EXPECT_TRUE(plan_chunks({}, 4).empty());
}

TEST(PlanChunks, ACutWhereParametersChange) {
  auto key = [](size_t i) { return i < 3 || i >= 5 ? std::string("a") : std::string("b"); };
  std::vector<Chunk> chunks = plan_chunks(index_range(0, 8), 4, key);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0], (Chunk{0, 1, 2}));
  EXPECT_EQ(chunks[1], (Chunk{3, 4}));
  EXPECT_EQ(chunks[2], (Chunk{5, 6, 7}));
}

TEST(PlanChunks, SkipsItemsNotListed) {
  std::vector<Chunk> chunks = plan_chunks({0, 1, 3, 4, 9}, 2);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[1], (Chunk{3, 4}));
  EXPECT_EQ(chunks[2], (Chunk{9}));
}

}  // namespace
}  // namespace plimsoll::client
