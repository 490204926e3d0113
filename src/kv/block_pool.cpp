// KV block pool: one mmap'd arena, a free stack, reference counts, and the
// prefix cache (key index, tokens per block, LRU list of reclaimable blocks).
#include "kv/block_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <random>
#include <string>

#include "core/bytes.h"
#include "kv/block_hash.h"

namespace plimsoll {

Result<std::unique_ptr<KvBlockPool>> KvBlockPool::create(const ModelConfig& config, int64_t n_blocks,
                                                          int64_t block_tokens, DType kv_dtype, bool prefix_caching) {
  if (n_blocks <= 0 || block_tokens <= 0 || n_blocks > INT32_MAX) {
    return make_error(ErrorCode::kInvalidArgument, "KV pool needs a positive number of blocks and block size");
  }
  if (kv_dtype != DType::kF32 && kv_dtype != DType::kF16) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the KV cache holds f32 or f16, not " + std::string(dtype_name(kv_dtype)));
  }
  std::unique_ptr<KvBlockPool> pool(new KvBlockPool());
  pool->n_blocks_ = n_blocks;
  pool->n_layers_ = config.n_layers;
  pool->block_tokens_ = block_tokens;
  pool->kv_dim_ = config.kv_dim();
  pool->dtype_ = kv_dtype;
  pool->elem_bytes_ = kv_dtype == DType::kF16 ? 2 : 4;
  pool->arena_bytes_ = n_blocks * config.n_layers * 2 * block_tokens * config.kv_dim() * pool->elem_bytes_;
  void* p = ::mmap(nullptr, static_cast<size_t>(pool->arena_bytes_), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return make_error(ErrorCode::kOutOfMemory, "cannot map the KV pool of " +
                                                   format_bytes(pool->arena_bytes_) + ": " +
                                                   std::strerror(errno));
  }
  pool->arena_ = static_cast<uint8_t*>(p);
  pool->free_.resize(static_cast<size_t>(n_blocks));
  for (int64_t i = 0; i < n_blocks; ++i) {
    pool->free_[static_cast<size_t>(i)] = static_cast<int32_t>(n_blocks - 1 - i);  // hand out 0 first
  }
  pool->free_top_ = static_cast<size_t>(n_blocks);
  pool->ref_.assign(static_cast<size_t>(n_blocks), 0);
  pool->caching_ = prefix_caching;
  if (prefix_caching) {
    pool->entries_.resize(static_cast<size_t>(n_blocks));
    pool->block_tokens_store_.assign(static_cast<size_t>(n_blocks * block_tokens), 0);
    pool->index_ = std::make_unique<BlockIndex>(n_blocks);
    const uint64_t salt = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    pool->root_hash_ = prefix_root_hash(config, kv_dtype, block_tokens, salt);
  }
  pool->set_counts();
  return pool;
}

int64_t KvBlockPool::bookkeeping_bytes_per_block(int64_t block_tokens, bool prefix_caching) {
  const int64_t base = 2 * static_cast<int64_t>(sizeof(int32_t));  // free stack + reference count
  if (!prefix_caching) return base;
  return base + static_cast<int64_t>(sizeof(Entry)) + block_tokens * static_cast<int64_t>(sizeof(int32_t)) +
         BlockIndex::max_bytes_per_entry();
}

KvBlockPool::~KvBlockPool() {
  if (arena_) ::munmap(arena_, static_cast<size_t>(arena_bytes_));
}

void KvBlockPool::set_counts() {
  free_count_.store(static_cast<int64_t>(free_top_) + reclaimable_, std::memory_order_relaxed);
  cached_count_.store(cached_, std::memory_order_relaxed);
  reclaimable_count_.store(reclaimable_, std::memory_order_relaxed);
}

void KvBlockPool::push_free(int32_t block) { free_[free_top_++] = block; }

std::optional<int32_t> KvBlockPool::allocate() {
  int32_t block = -1;
  if (free_top_ > 0) {
    block = free_[--free_top_];
  } else if (lru_head_ >= 0) {
    block = lru_head_;
    uncache(block);  // pushes it onto the free stack: take it back
    block = free_[--free_top_];
    evictions_.fetch_add(1, std::memory_order_relaxed);
  } else {
    return std::nullopt;
  }
  ref_[static_cast<size_t>(block)] = 1;
  set_counts();
  return block;
}

void KvBlockPool::release(int32_t block) {
  assert(block >= 0 && block < n_blocks_ && ref_[static_cast<size_t>(block)] > 0);
  if (block < 0 || block >= n_blocks_ || ref_[static_cast<size_t>(block)] <= 0) return;
  if (--ref_[static_cast<size_t>(block)] > 0) return;
  if (is_cached(block)) {
    lru_push_back(block);
  } else {
    push_free(block);
  }
  set_counts();
}

bool KvBlockPool::stale(const Entry& e) const {
  return e.parent >= 0 && entries_[static_cast<size_t>(e.parent)].epoch != e.parent_epoch;
}

int32_t KvBlockPool::find_cached(uint64_t key, int32_t parent, std::span<const int32_t> tokens) const {
  if (!caching_ || static_cast<int64_t>(tokens.size()) != block_tokens_) return -1;
  const int32_t b = index_->find(key);
  if (b < 0) return -1;
  const Entry& e = entries_[static_cast<size_t>(b)];
  if (!e.cached || e.parent != parent || stale(e)) return -1;
  const std::span<const int32_t> held = tokens_of(b);
  return std::equal(held.begin(), held.end(), tokens.begin()) ? b : -1;
}

void KvBlockPool::acquire(int32_t block) {
  assert(is_cached(block));
  if (ref_[static_cast<size_t>(block)]++ == 0) {
    lru_unlink(block);
    set_counts();
  }
}

bool KvBlockPool::publish(int32_t block, uint64_t key, int32_t parent, std::span<const int32_t> tokens) {
  if (!caching_ || static_cast<int64_t>(tokens.size()) != block_tokens_) return false;
  Entry& e = entries_[static_cast<size_t>(block)];
  assert(ref_[static_cast<size_t>(block)] > 0 && !e.cached);
  if (e.cached || (parent >= 0 && !is_cached(parent))) return false;
  if (const int32_t holder = index_->find(key); holder >= 0) {
    if (!stale(entries_[static_cast<size_t>(holder)])) return false;  // the same prefix, cached already
    uncache(holder);  // unreachable since its parent left: give the key to the live chain
  }
  index_->insert(key, block);
  e.key = key;
  e.parent = parent;
  e.parent_epoch = parent >= 0 ? entries_[static_cast<size_t>(parent)].epoch : 0;
  e.cached = true;
  std::copy(tokens.begin(), tokens.end(),
            block_tokens_store_.begin() + static_cast<std::ptrdiff_t>(block * block_tokens_));
  ++cached_;
  set_counts();
  return true;
}

void KvBlockPool::uncache(int32_t block) {
  Entry& e = entries_[static_cast<size_t>(block)];
  index_->erase(e.key, block);
  e.cached = false;
  ++e.epoch;
  --cached_;
  if (ref_[static_cast<size_t>(block)] == 0) {
    lru_unlink(block);
    push_free(block);
  }
  set_counts();
}

void KvBlockPool::lru_push_back(int32_t block) {
  Entry& e = entries_[static_cast<size_t>(block)];
  e.prev = lru_tail_;
  e.next = -1;
  if (lru_tail_ >= 0) {
    entries_[static_cast<size_t>(lru_tail_)].next = block;
  } else {
    lru_head_ = block;
  }
  lru_tail_ = block;
  ++reclaimable_;
}

void KvBlockPool::lru_unlink(int32_t block) {
  Entry& e = entries_[static_cast<size_t>(block)];
  if (e.prev >= 0) {
    entries_[static_cast<size_t>(e.prev)].next = e.next;
  } else {
    lru_head_ = e.next;
  }
  if (e.next >= 0) {
    entries_[static_cast<size_t>(e.next)].prev = e.prev;
  } else {
    lru_tail_ = e.prev;
  }
  e.prev = e.next = -1;
  --reclaimable_;
}

}  // namespace plimsoll
