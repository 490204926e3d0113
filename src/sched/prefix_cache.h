// The scheduler's side of the KV pool's prefix cache (kv/block_pool.h): the
// keys of a sequence's full blocks, the longest cached prefix of a prompt,
// whether a running sequence is computing the next block already, and
// publishing blocks as they are written. Only full blocks are shared, and a
// sequence never writes to a block it did not allocate: it starts after the
// blocks it found.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kv/block_pool.h"
#include "sched/sequence.h"

namespace plimsoll::sched {

struct PrefixMatch {
  int64_t blocks = 0;       // leading prompt blocks found, appended to seq.table.blocks (not yet acquired)
  int64_t reclaimable = 0;  // of them, blocks no one uses now: taking them takes that many free blocks
};

// The longest run of the prompt's leading full blocks the cache holds, at most
// (prompt_len - 1) / block_tokens of them: the last prompt token is always
// computed, its logits start the answer. Keys the prompt's full blocks first
// (once, into seq.block_keys, reserved for every full block the sequence can have).
// None for a sequence that wants prompt logprobs: it computes its whole prompt.
PrefixMatch find_cached_prefix(const KvBlockPool& pool, Sequence& seq);

// True when a running sequence is computing the prompt block that would
// extend seq's first `matched_blocks` (the same key, not yet published):
// seq waits to find it cached rather than compute it a second time.
bool prefix_being_computed(const KvBlockPool& pool, const Sequence& seq, int64_t matched_blocks,
                           const std::vector<std::unique_ptr<Sequence>>& running);

// Publishes seq's full blocks whose K/V are written (below kv_len), from
// seq.published_blocks on; keys the ones past the prompt as they fill.
void publish_written_blocks(KvBlockPool& pool, Sequence& seq);

}  // namespace plimsoll::sched
