// KvBlockPool: the KV cache as fixed blocks of `block_tokens` tokens in one
// arena allocated at start-up; O(1) allocate/release from a free stack.
// Layout of a block: [n_layers][2 (k, v)][block_tokens][kv_dim] elements of
// the pool's dtype (f32, or f16 for half the bytes per token).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "formats/model_config.h"

namespace plimsoll {

class KvBlockPool {
 public:
  // Allocates n_blocks blocks at once (memory is committed lazily by the OS
  // as blocks are first written; the plan counts all of it).
  // kv_dtype: kF32 or kF16 (anything else is kInvalidArgument).
  static Result<std::unique_ptr<KvBlockPool>> create(const ModelConfig& config, int64_t n_blocks,
                                                     int64_t block_tokens, DType kv_dtype = DType::kF32);
  ~KvBlockPool();
  KvBlockPool(const KvBlockPool&) = delete;
  KvBlockPool& operator=(const KvBlockPool&) = delete;

  // A free block id, or nullopt when none is left. No allocation.
  std::optional<int32_t> allocate();
  void release(int32_t block);

  int64_t n_blocks() const { return n_blocks_; }
  // Counts may be read from any thread (metrics, tests); allocate/release only on the owner's.
  int64_t free_blocks() const { return static_cast<int64_t>(free_top_.load(std::memory_order_relaxed)); }
  int64_t used_blocks() const { return n_blocks_ - free_blocks(); }
  int64_t block_tokens() const { return block_tokens_; }
  int64_t kv_dim() const { return kv_dim_; }
  int64_t arena_bytes() const { return arena_bytes_; }
  DType dtype() const { return dtype_; }
  int64_t elem_bytes() const { return elem_bytes_; }  // 4 (f32) or 2 (f16)

  // Keys of `block` at `layer`: [block_tokens, kv_dim] elements of dtype(); values likewise.
  void* keys(int32_t block, int64_t layer) { return element(block_base(block, layer)); }
  void* values(int32_t block, int64_t layer) { return element(block_base(block, layer) + block_tokens_ * kv_dim_); }
  // Elements from one block to the next: keys(b, l) is element b * block_stride_elems() of keys(0, l).
  int64_t block_stride_elems() const { return n_layers_ * 2 * block_tokens_ * kv_dim_; }

 private:
  KvBlockPool() = default;
  int64_t block_base(int32_t block, int64_t layer) const {  // in elements
    return (static_cast<int64_t>(block) * n_layers_ + layer) * 2 * block_tokens_ * kv_dim_;
  }
  void* element(int64_t index) { return arena_ + index * elem_bytes_; }

  uint8_t* arena_ = nullptr;
  DType dtype_ = DType::kF32;
  int64_t elem_bytes_ = 4;
  int64_t arena_bytes_ = 0;
  int64_t n_blocks_ = 0;
  int64_t n_layers_ = 0;
  int64_t block_tokens_ = 0;
  int64_t kv_dim_ = 0;
  std::vector<int32_t> free_;  // stack of free ids; capacity n_blocks, never reallocates
  std::atomic<size_t> free_top_{0};
  std::vector<uint8_t> in_use_;  // double-release guard
};

// The blocks of one sequence, in position order. Capacity is reserved at
// admission (blocks for the sequence's whole length) so appending never allocates.
struct BlockTable {
  std::vector<int32_t> blocks;
  int64_t n_tokens = 0;  // tokens whose K/V are written

  int64_t capacity_tokens(int64_t block_tokens) const {
    return static_cast<int64_t>(blocks.size()) * block_tokens;
  }
};

// Blocks needed to hold n_tokens.
inline int64_t blocks_for_tokens(int64_t n_tokens, int64_t block_tokens) {
  return (n_tokens + block_tokens - 1) / block_tokens;
}

}  // namespace plimsoll
