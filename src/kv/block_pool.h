// KvBlockPool: the KV cache as fixed blocks of `block_tokens` tokens in one
// arena allocated at start-up; O(1) allocate/release. Blocks are reference
// counted. With prefix caching on, a full block can be published under its
// key (kv/block_hash.h: its tokens and everything before them): sequences
// whose prompts start the same way then share it (acquire), never writing to
// it, and when its last user lets go it stays cached — reclaimable, counted
// free — until allocate() needs a block and no plain free one is left, which
// evicts the least recently released cached block.
// Layout of a block: [n_layers][2 (k, v)] slabs of block_tokens * kv_dim
// elements of the pool's dtype (f32, or f16 for half the bytes per token); the
// engine keeps each slab head-major, [n_kv_heads][block_tokens][head_dim], so
// one head's rows of a block are contiguous (a decode head reads them as one run).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "core/model_config.h"
#include "kv/block_index.h"

namespace plimsoll {

class KvBlockPool {
 public:
  // Allocates n_blocks blocks at once (memory is committed lazily by the OS
  // as blocks are first written; the plan counts all of it), and the
  // bookkeeping of bookkeeping_bytes_per_block() per block.
  // kv_dtype: kF32 or kF16 (anything else is kInvalidArgument).
  static Result<std::unique_ptr<KvBlockPool>> create(const ModelConfig& config, int64_t n_blocks,
                                                     int64_t block_tokens, DType kv_dtype = DType::kF32,
                                                     bool prefix_caching = false);
  // Bytes the pool holds per block besides the arena (free list, reference
  // counts; with prefix caching, each block's key, tokens, LRU links and
  // index slots): an upper bound the memory plan counts.
  static int64_t bookkeeping_bytes_per_block(int64_t block_tokens, bool prefix_caching);
  ~KvBlockPool();
  KvBlockPool(const KvBlockPool&) = delete;
  KvBlockPool& operator=(const KvBlockPool&) = delete;

  // A block of its own for the caller (reference count 1): a plain free block,
  // else the least recently released cached one (evicted); nullopt when every
  // block is in use. No allocation.
  std::optional<int32_t> allocate();
  // Drops one reference; at none the block is free again (cached, if published).
  void release(int32_t block);

  int64_t n_blocks() const { return n_blocks_; }
  // Counts may be read from any thread (metrics, tests); every other call only on the owner's.
  // Free: plain free blocks + cached blocks no one uses (reclaimable by allocate()).
  int64_t free_blocks() const { return free_count_.load(std::memory_order_relaxed); }
  int64_t used_blocks() const { return n_blocks_ - free_blocks(); }
  int64_t block_tokens() const { return block_tokens_; }
  int64_t kv_dim() const { return kv_dim_; }
  int64_t arena_bytes() const { return arena_bytes_; }
  DType dtype() const { return dtype_; }
  int64_t elem_bytes() const { return elem_bytes_; }  // 4 (f32) or 2 (f16)
  int32_t ref_count(int32_t block) const { return ref_[static_cast<size_t>(block)]; }

  // --- prefix cache (every call is a no-op or a miss when it is off) ---
  bool prefix_caching() const { return caching_; }
  // The key before a sequence's first block.
  uint64_t root_hash() const { return root_hash_; }
  // The cached block keyed `key` holding exactly `tokens` (block_tokens of
  // them) after `parent` (the block found for the previous key; -1 for the
  // first block), or -1.
  int32_t find_cached(uint64_t key, int32_t parent, std::span<const int32_t> tokens) const;
  // One more reference to a block find_cached() returned (it stops being reclaimable).
  void acquire(int32_t block);
  // Publishes a full block the caller holds and will not write again, keyed
  // `key`, holding `tokens`, after `parent` (the caller's previous block, -1
  // for the first). Nothing happens (false) when the parent is not cached or
  // another block holds the key already.
  bool publish(int32_t block, uint64_t key, int32_t parent, std::span<const int32_t> tokens);
  bool is_cached(int32_t block) const { return caching_ && entries_[static_cast<size_t>(block)].cached; }
  // Blocks published and not evicted (in use or not), those no one uses, evictions so far.
  int64_t cached_blocks() const { return cached_count_.load(std::memory_order_relaxed); }
  int64_t reclaimable_blocks() const { return reclaimable_count_.load(std::memory_order_relaxed); }
  int64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

  // Keys of `block` at `layer`: block_tokens * kv_dim elements of dtype(); values likewise.
  void* keys(int32_t block, int64_t layer) { return element(block_base(block, layer)); }
  void* values(int32_t block, int64_t layer) { return element(block_base(block, layer) + block_tokens_ * kv_dim_); }
  // Elements from one block to the next: keys(b, l) is element b * block_stride_elems() of keys(0, l).
  int64_t block_stride_elems() const { return n_layers_ * 2 * block_tokens_ * kv_dim_; }

 private:
  // A block's prefix-cache state.
  struct Entry {
    uint64_t key = 0;
    int32_t parent = -1;       // the block before it when published (-1: first)
    uint32_t parent_epoch = 0; // the parent's epoch then: a parent evicted since is another block now
    uint32_t epoch = 0;        // bumped each time the block leaves the cache
    int32_t prev = -1, next = -1;  // LRU links while cached and unused
    bool cached = false;
  };

  KvBlockPool() = default;
  int64_t block_base(int32_t block, int64_t layer) const {  // in elements
    return (static_cast<int64_t>(block) * n_layers_ + layer) * 2 * block_tokens_ * kv_dim_;
  }
  void* element(int64_t index) { return arena_ + index * elem_bytes_; }
  std::span<const int32_t> tokens_of(int32_t block) const {
    return std::span(block_tokens_store_).subspan(static_cast<size_t>(block * block_tokens_),
                                                  static_cast<size_t>(block_tokens_));
  }
  bool stale(const Entry& e) const;  // its parent has left the cache since it was published
  void push_free(int32_t block);
  void lru_push_back(int32_t block);
  void lru_unlink(int32_t block);
  void uncache(int32_t block);  // drops the key; an unused block moves to the free stack
  void set_counts();

  uint8_t* arena_ = nullptr;
  DType dtype_ = DType::kF32;
  int64_t elem_bytes_ = 4;
  int64_t arena_bytes_ = 0;
  int64_t n_blocks_ = 0;
  int64_t n_layers_ = 0;
  int64_t block_tokens_ = 0;
  int64_t kv_dim_ = 0;
  std::vector<int32_t> free_;  // stack of plain free ids; capacity n_blocks, never reallocates
  size_t free_top_ = 0;
  std::vector<int32_t> ref_;   // references per block (0: free or reclaimable)
  // prefix cache
  bool caching_ = false;
  uint64_t root_hash_ = 0;
  std::vector<Entry> entries_;             // [n_blocks] (empty when caching is off)
  std::vector<int32_t> block_tokens_store_;  // [n_blocks, block_tokens]: each cached block's tokens
  std::unique_ptr<BlockIndex> index_;
  int32_t lru_head_ = -1, lru_tail_ = -1;  // head: evicted first
  int64_t reclaimable_ = 0, cached_ = 0;
  // Mirrors for other threads.
  std::atomic<int64_t> free_count_{0}, cached_count_{0}, reclaimable_count_{0}, evictions_{0};
};

// The blocks of one sequence, in position order. Capacity is reserved when
// it starts (blocks for the sequence's whole length) so appending never
// allocates. The leading ones may be shared cached blocks (read only).
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
