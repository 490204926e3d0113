// Prefix-cache keys. A full KV block is named by a hash of its tokens chained
// onto the key of the block before it, so equal keys mean (up to collisions,
// which the pool rules out by comparing tokens and parents) equal prompts from
// the first token to the block's last. The chain starts at a root naming the
// model's shape, the KV dtype and the block size, salted per process so keys
// cannot be aimed at one another from outside.
#pragma once

#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "core/model_config.h"

namespace plimsoll {

// The key "before the first block" of a pool for this model, dtype and block size.
uint64_t prefix_root_hash(const ModelConfig& config, DType kv_dtype, int64_t block_tokens, uint64_t salt);

// The key of a block holding `tokens` after the block keyed `parent`.
uint64_t chain_block_hash(uint64_t parent, std::span<const int32_t> tokens);

}  // namespace plimsoll
