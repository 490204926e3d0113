// The key and value rows of consecutive positions of one KV head in a paged
// cache, for the attention kernels of every ISA file. Internal linkage (an
// anonymous namespace): each ISA-flagged file keeps its own copy.
#pragma once

#include <cstdint>

#include "kernels/attention.h"

namespace plimsoll::kernels {
namespace {

// k[j], v[j]: the rows of position p0 + j, j < n.
template <class T>
inline void gather_kv_rows(const PagedKv& kv, int64_t p0, int n, const T** k, const T** v) {
  int64_t block = p0 / kv.block_tokens, row = p0 % kv.block_tokens;  // one division per chunk
  for (int j = 0; j < n; ++j, ++row) {
    if (row == kv.block_tokens) {
      row = 0;
      ++block;
    }
    const int64_t off = kv.blocks[block] * kv.block_stride + row * kv.pos_stride;
    k[j] = static_cast<const T*>(kv.keys) + off;
    v[j] = static_cast<const T*>(kv.values) + off;
  }
}

// At the first position p0 of a block, asks for the head's keys and values in the
// next block (if n_pos reaches it): the blocks lie anywhere in the pool, a jump the
// hardware prefetchers do not follow, so a decode head would otherwise wait on
// memory at the start of every block. With the engine's head-major slabs
// (pos_stride == head_dim) a head's rows of a block are one contiguous run.
// Always inlined: GCC finds a function that only prefetches free of side effects
// (pure) and drops the call.
template <class T>
[[gnu::always_inline]] inline void prefetch_next_block(const PagedKv& kv, int64_t p0, int64_t n_pos, int64_t head_dim) {
  if (p0 % kv.block_tokens != 0 || p0 + kv.block_tokens >= n_pos) return;
  const int64_t off = kv.blocks[p0 / kv.block_tokens + 1] * kv.block_stride;
  const auto* k = reinterpret_cast<const char*>(static_cast<const T*>(kv.keys) + off);
  const auto* v = reinterpret_cast<const char*>(static_cast<const T*>(kv.values) + off);
  // the lines from the first row's start to the last row's end: with head-major slabs
  // just the head's rows, else every head's (still a hint, and a bounded one)
  const int64_t bytes = ((kv.block_tokens - 1) * kv.pos_stride + head_dim) * static_cast<int64_t>(sizeof(T));
  for (int64_t b = 0; b < bytes; b += 64) {
    __builtin_prefetch(k + b);
    __builtin_prefetch(v + b);
  }
}

}  // namespace
}  // namespace plimsoll::kernels
