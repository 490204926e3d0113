// Runs planned chunks: up to `parallel` at once on threads, each retried by the
// RetryPolicy; a chunk refused for one bad item is retried item by item.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "client/chunking.h"
#include "client/client_error.h"
#include "client/retry_policy.h"
#include "client/types.h"

namespace plimsoll::client {

using ItemResult = ClientResult<Generation>;

// One retry, for logs and progress.
struct RetryNote {
  size_t first_index = 0;  // the chunk's first item
  size_t items = 0;
  ClientError error;       // why
  int64_t wait_ms = 0;
  int64_t retry = 0;       // 1 = the first retry of this request
};

struct BatchOptions {
  int64_t parallel = 4;        // chunks in flight at once
  int64_t max_chunk_size = 0;  // the user's cap; 0 = the server's safe size alone
  RetryPolicy retry;
  // Chunks started ahead of the oldest unfinished one (0 = 4 x parallel): bounds
  // what an in-order consumer must buffer while one chunk keeps retrying.
  int64_t window_chunks = 0;
  // Called once per item as it finishes, in any order, one call at a time.
  std::function<void(size_t index, const ItemResult& result)> on_item;
  std::function<void(const RetryNote& note)> on_retry;
  std::function<void(int64_t generated_tokens)> on_tokens;  // per answered request
};

struct BatchStats {
  int64_t chunk_size = 0;
  int64_t chunks = 0;
  int64_t requests = 0;
  int64_t retries = 0;
  int64_t generated_tokens = 0;
  int64_t failed = 0;
};

struct BatchResult {
  std::vector<ItemResult> items;  // in input order
  BatchStats stats;
};

// Sends one chunk as one request; answers one Generation per index, in order.
using ChunkSender = std::function<ClientResult<GenerationList>(const Chunk& chunk)>;

// Runs every chunk; items [0, item_count) not in any chunk come back as kInput
// errors ("not run"). stats.chunk_size is left to the caller.
BatchResult run_chunks(size_t item_count, const std::vector<Chunk>& chunks, const ChunkSender& send,
                       const BatchOptions& options);

}  // namespace plimsoll::client
