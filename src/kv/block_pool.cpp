// KV block pool: one mmap'd arena, a free stack, a double-release guard.
#include "kv/block_pool.h"

#include <sys/mman.h>

#include <cassert>
#include <cerrno>
#include <cstring>
#include <string>

#include "core/bytes.h"

namespace plimsoll {

Result<std::unique_ptr<KvBlockPool>> KvBlockPool::create(const ModelConfig& config, int64_t n_blocks,
                                                          int64_t block_tokens, DType kv_dtype) {
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
  pool->free_top_.store(static_cast<size_t>(n_blocks));
  pool->in_use_.assign(static_cast<size_t>(n_blocks), 0);
  return pool;
}

KvBlockPool::~KvBlockPool() {
  if (arena_) ::munmap(arena_, static_cast<size_t>(arena_bytes_));
}

std::optional<int32_t> KvBlockPool::allocate() {
  const size_t top = free_top_.load(std::memory_order_relaxed);
  if (top == 0) return std::nullopt;
  const int32_t block = free_[top - 1];
  free_top_.store(top - 1, std::memory_order_relaxed);
  in_use_[static_cast<size_t>(block)] = 1;
  return block;
}

void KvBlockPool::release(int32_t block) {
  assert(block >= 0 && block < n_blocks_ && in_use_[static_cast<size_t>(block)]);
  if (block < 0 || block >= n_blocks_ || !in_use_[static_cast<size_t>(block)]) return;
  in_use_[static_cast<size_t>(block)] = 0;
  const size_t top = free_top_.load(std::memory_order_relaxed);
  free_[top] = block;
  free_top_.store(top + 1, std::memory_order_relaxed);
}

}  // namespace plimsoll
