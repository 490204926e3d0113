// Chunk size choice and chunk planning (see chunking.h).
// Pure functions: the splitting tests run without a server.
#include "client/chunking.h"

#include <algorithm>

namespace plimsoll::client {

int64_t choose_chunk_size(const std::optional<ServerInfo>& info, int64_t user_cap) {
  int64_t server = 0;
  if (info) {
    server = info->safe_client_batch_size > 0 ? info->safe_client_batch_size : info->max_client_batch_size;
    if (info->max_client_batch_size > 0 && server > info->max_client_batch_size) server = info->max_client_batch_size;
  }
  if (server > 0 && user_cap > 0) return std::min(server, user_cap);
  if (server > 0) return server;
  return std::max<int64_t>(user_cap, 1);
}

std::vector<Chunk> plan_chunks(const std::vector<size_t>& items, int64_t chunk_size,
                               const std::function<std::string(size_t)>& group_key) {
  const size_t limit = static_cast<size_t>(std::max<int64_t>(chunk_size, 1));
  std::vector<Chunk> chunks;
  std::string key;
  for (size_t i : items) {
    std::string item_key = group_key ? group_key(i) : std::string();
    if (chunks.empty() || chunks.back().size() >= limit || item_key != key) chunks.emplace_back();
    chunks.back().push_back(i);
    key = std::move(item_key);
  }
  return chunks;
}

std::vector<size_t> index_range(size_t first, size_t count) {
  std::vector<size_t> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = first + i;
  return out;
}

}  // namespace plimsoll::client
