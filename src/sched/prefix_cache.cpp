// Prefix matching and publishing over the pool's prefix cache.
#include "sched/prefix_cache.h"

#include "kv/block_hash.h"

namespace plimsoll::sched {
namespace {

std::span<const int32_t> block_tokens_of(const Sequence& seq, int64_t block, int64_t bt) {
  return std::span(seq.tokens).subspan(static_cast<size_t>(block * bt), static_cast<size_t>(bt));
}

// Appends the key of seq's next full block (its tokens are known).
void key_next_block(const KvBlockPool& pool, Sequence& seq) {
  const int64_t j = static_cast<int64_t>(seq.block_keys.size());
  uint64_t parent = j == 0 ? pool.root_hash() : seq.block_keys.back();
  if (j == 0 && seq.owner->prefix_salt != 0) {  // a tenant's own cache: its chains start from its own root
    const int32_t salt[1] = {-seq.owner->prefix_salt};
    parent = chain_block_hash(parent, salt);
  }
  seq.block_keys.push_back(chain_block_hash(parent, block_tokens_of(seq, j, pool.block_tokens())));
}

void key_prompt_blocks(const KvBlockPool& pool, Sequence& seq) {
  const int64_t bt = pool.block_tokens();
  if (seq.block_keys.capacity() == 0) seq.block_keys.reserve(static_cast<size_t>(seq.total_tokens() / bt + 1));
  while (static_cast<int64_t>(seq.block_keys.size()) < seq.prompt_len / bt) key_next_block(pool, seq);
}

}  // namespace

PrefixMatch find_cached_prefix(const KvBlockPool& pool, Sequence& seq) {
  PrefixMatch m;
  // Prompt logprobs need every prompt row's logits: such a prompt is computed
  // whole (its blocks are published for the others all the same).
  if (!pool.prefix_caching() || seq.request.prompt_details) return m;
  key_prompt_blocks(pool, seq);
  const int64_t bt = pool.block_tokens();
  const int64_t most = (seq.prompt_len - 1) / bt;
  int32_t parent = -1;
  for (int64_t j = 0; j < most; ++j) {
    const int32_t b = pool.find_cached(seq.block_keys[static_cast<size_t>(j)], parent, block_tokens_of(seq, j, bt));
    if (b < 0) break;
    seq.table.blocks.push_back(b);
    if (pool.ref_count(b) == 0) ++m.reclaimable;
    ++m.blocks;
    parent = b;
  }
  return m;
}

bool prefix_being_computed(const KvBlockPool& pool, const Sequence& seq, int64_t matched_blocks,
                           const std::vector<std::unique_ptr<Sequence>>& running) {
  if (!pool.prefix_caching() || seq.request.prompt_details ||
      matched_blocks >= (seq.prompt_len - 1) / pool.block_tokens())
    return false;
  const size_t j = static_cast<size_t>(matched_blocks);
  const uint64_t key = seq.block_keys[j];
  for (const auto& r : running) {
    if (r->published_blocks <= matched_blocks && r->block_keys.size() > j && r->block_keys[j] == key) return true;
  }
  return false;
}

void publish_written_blocks(KvBlockPool& pool, Sequence& seq) {
  if (!pool.prefix_caching()) return;
  const int64_t bt = pool.block_tokens();
  if (seq.block_keys.capacity() == 0) key_prompt_blocks(pool, seq);
  for (int64_t j = seq.published_blocks; j < seq.kv_len / bt; ++j) {
    if (static_cast<int64_t>(seq.block_keys.size()) == j) key_next_block(pool, seq);
    const int32_t parent = j == 0 ? -1 : seq.table.blocks[static_cast<size_t>(j - 1)];
    pool.publish(seq.table.blocks[static_cast<size_t>(j)], seq.block_keys[static_cast<size_t>(j)], parent,
                 block_tokens_of(seq, j, bt));
    seq.published_blocks = j + 1;
  }
}

}  // namespace plimsoll::sched
