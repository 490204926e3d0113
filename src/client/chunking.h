// How a batch is cut: the chunk size from the server's /info and the user's
// cap, and consecutive chunks that never mix items with different parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "client/types.h"

namespace plimsoll::client {

using Chunk = std::vector<size_t>;  // item indices, ascending

// safe_client_batch_size (or, from a plain TGI, max_client_batch_size), never
// above max_client_batch_size, then the user cap (0 = none) if smaller; with
// neither known, 1. Always >= 1.
int64_t choose_chunk_size(const std::optional<ServerInfo>& info, int64_t user_cap);

// The items (ascending indices) in order, cut every `chunk_size` items and
// wherever group_key changes (items sent together share one parameter set).
std::vector<Chunk> plan_chunks(const std::vector<size_t>& items, int64_t chunk_size,
                               const std::function<std::string(size_t)>& group_key = nullptr);
// first, first + 1, ..., first + count - 1
std::vector<size_t> index_range(size_t first, size_t count);

}  // namespace plimsoll::client
