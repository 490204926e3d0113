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

}  // namespace
}  // namespace plimsoll::kernels
