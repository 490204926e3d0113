// TokenTrie: the vocabulary's texts as a prefix tree, laid out in preorder,
// so a grammar mask is one forward pass that skips every subtree whose prefix
// the grammar refuses (cost: the nodes still alive, not the vocabulary).
// GrammarMatcher: one sequence's place in its grammar.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/grammar_lazy.h"
#include "tokenizer/text_tokenizer.h"

namespace plimsoll {

class TokenTrie {
 public:
  // Built once per tokenizer: every non-special token with a non-empty text
  // (its text in the middle of a sequence, after an ordinary token).
  static TokenTrie build(const TextTokenizer& tokenizer);

  struct WalkBuffers;
  // What a walk found: tokens in *bits, the most bytes any leaves (less its
  // stack's offset); for a class walk (pops set) the output "ending" means
  // the top frame popped, and the nodes whose subtrees go on after a pop.
  struct WalkOut {
    std::vector<uint64_t>* bits;
    int64_t maxd = 0;
    std::vector<uint32_t>* pops = nullptr;
    // A counted class walk (FrameClass::tok_j): the walk's bottom frame
    // started at count base_count; per token and pop the fewest items it
    // restarts (255: refused), per room a bound on maxd (maxd_j [room + 1],
    // at the least room that takes the token: the caller takes prefix maxima).
    std::vector<uint8_t>* tok_j = nullptr;
    std::vector<uint8_t>* pop_j = nullptr;
    std::vector<int64_t>* maxd_j = nullptr;
    int32_t base_count = 0;
    // Per accepted token [vocab] the bytes it leaves, less its stack's
    // offset; -1 where the walk's tops may end at its last byte. In a
    // counted walk, on its paths that restart the fewest items; tok_d_inexact:
    // some token leaves fewer bytes on a path that restarts more.
    std::vector<int32_t>* tok_d = nullptr;
    bool tok_d_inexact = false;
  };
  // Walks nodes [first, last) (a subtree below depth `base`, or the whole
  // trie from 0) from `tops`, allowing tokens at most budget_bytes from complete.
  void walk(StackWalk& walk, const GTop* tops, size_t n_tops, size_t first, size_t last, size_t base,
            int64_t budget_bytes, const std::vector<int64_t>& offsets, WalkOut& out, WalkBuffers& b) const;
  // Tokens in the trie as a bitset [vocab / 64].
  const std::vector<uint64_t>& all_bits() const { return all_bits_; }
  uint32_t subtree_end(uint32_t node) const { return end_[node]; }
  uint16_t depth(uint32_t node) const { return depth_[node]; }
  // Sets in `bits` each token whose bytes keep some stack of `tops` alive
  // (or end the output exactly) and leave it at most `budget_bytes` bytes from
  // complete; `maxd`: the most bytes any of them leaves, less the stack's
  // origin offset (`offsets`, the mask cache's clamped counters). Lock held.
  void allowed(StackWalk& walk, const std::vector<GTop>& tops, int64_t budget_bytes,
               const std::vector<int64_t>& offsets, std::vector<uint64_t>& bits, int64_t& maxd,
               WalkBuffers& b) const;
  // The bytes the trie holds for `id` ("" when it is not in the trie).
  std::string_view text(int32_t id) const;
  // Every single byte is some token's text: any grammar can be completed one
  // byte per token, so the length budget below always suffices.
  bool has_all_bytes() const { return has_all_bytes_; }
  int64_t num_nodes() const { return static_cast<int64_t>(byte_.size()); }
  int64_t vocab_size() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  int64_t max_depth() const { return max_depth_; }
  // Unique per trie built in this process (the grammars' caches key on it).
  uint32_t id() const { return id_; }
  int64_t bytes() const;

 private:
  static bool memo_step(StackWalk& w, WalkBuffers& b, size_t d, uint8_t byte, int32_t stable_links);
  std::vector<uint8_t> byte_;        // [nodes] the node's byte
  std::vector<uint16_t> depth_;      // [nodes] 1 = a child of the root
  std::vector<uint32_t> end_;        // [nodes] the first node after its subtree
  std::vector<uint32_t> tok_begin_;  // [nodes + 1] its tokens: tokens_[tok_begin_[i], tok_begin_[i+1])
  std::vector<int32_t> tokens_;
  std::vector<char> blob_;           // every token's text
  std::vector<uint32_t> offsets_;    // [vocab + 1] into blob_
  std::vector<uint64_t> all_bits_;   // [vocab / 64] tokens in the trie
  int64_t max_depth_ = 0;
  uint32_t id_ = 0;
  bool has_all_bytes_ = false;
};

// The trie walk's sets of stacks, one region per depth, and a memo of
// steps: a set of up to kMemoTops stacks whose links all predate the walk,
// stepped by one byte, is the same set wherever the walk meets it (a JSON
// string's characters: most of a class walk's nodes).
struct TokenTrie::WalkBuffers {
  static constexpr size_t kMemoTops = 4;
  static constexpr size_t kMemoSlots = 2048;
  struct MemoEntry {
    uint32_t walk = 0;  // the walk that made it (older: empty)
    uint8_t byte = 0, n_in = 0, n_out = 0;
    bool can_end = false;
    int32_t ended_count = 0;
    GTop in[kMemoTops], out[kMemoTops];
  };
  std::vector<GTop> sets;         // [(max_depth + 1) x max_stacks]
  std::vector<uint32_t> set_at;   // [max_depth + 1]
  std::vector<uint32_t> set_len;  // [max_depth + 1]
  std::vector<size_t> pool_at;    // [max_depth + 1]
  std::vector<MemoEntry> memo;    // [kMemoSlots] (~290 KiB)
  uint32_t walk_id = 0;
};

// Reusable buffers of the masking pass (one per engine thread), sized for the
// trie's vocabulary at start-up: masking then allocates nothing while serving
// beyond the grammar's own lazily built part (charged at admission).
struct GrammarScratch {
  std::vector<int32_t> allowed;  // [<= vocab] (end ids)
  std::vector<float> kept;       // [<= vocab]
  std::vector<uint64_t> bits;    // [vocab / 64]
  std::vector<GTop> tops, next;  // [max_stacks]
  std::vector<int32_t> key;      // the mask cache's key
  std::vector<int64_t> offsets;  // [max_stacks]
  StackBuffers stack;
  TokenTrie::WalkBuffers walk;
  // Frame classes: a class's key, its walk's bits and offset, the pops of
  // the class in use, the stacks below a popped frame.
  std::vector<int32_t> class_key;
  std::vector<uint64_t> class_bits;
  std::vector<int64_t> class_offsets;
  std::vector<uint32_t> pops;
  std::vector<GTop> context;
  std::vector<int32_t> tok_d;        // [vocab] a class walk's bytes left per token
  std::vector<int32_t> level_count;  // [values] the class levels' counting sort
  void reserve(const TokenTrie& trie);
  // What reserve() and a mask's first use hold for a vocabulary (the plan's
  // count of the mask thread's scratch): the per-token buffers (allowed,
  // kept, tok_d, ~12 B per token), three bitsets, stacks (256 KiB) and the
  // walk's memo.
  static int64_t bytes_for_vocab(int64_t vocab) {
    return vocab * 12 + 3 * (vocab + 63) / 64 * 8 + (256 << 10) +
           static_cast<int64_t>(TokenTrie::WalkBuffers::kMemoSlots * sizeof(TokenTrie::WalkBuffers::MemoEntry));
  }
};

class GrammarMatcher {
 public:
  GrammarMatcher() = default;
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  bool active() const { return grammar_ != nullptr; }
  // Sets every logit the grammar refuses to -inf: tokens that cannot continue
  // a valid output, or whose output could no longer be completed within
  // `tokens_left` (this one included; one byte per later token), and the end
  // ids unless the output so far is complete. Returns false when nothing at
  // all is allowed (the vocabulary cannot spell what the grammar needs).
  // The allowed set comes from the grammar's mask cache when the length
  // budget provably cannot bind.
  bool mask(std::span<float> logits, const TokenTrie& trie, int64_t tokens_left, std::span<const int32_t> end_ids,
            GrammarScratch& scratch) const;
  // The tokens mask() allows, as a bitset [vocab / 64] in `bits` (end ids
  // not included: apply() adds them); false when the output is dead. Another
  // thread may fill while this matcher's grammar serves others (it locks).
  bool fill(const TokenTrie& trie, int64_t tokens_left, GrammarScratch& scratch, std::vector<uint64_t>& bits) const;
  // Applies `bits` (from fill() at this position) to logits, plus the end ids
  // when the output is complete; false when nothing is allowed.
  bool apply(std::span<float> logits, const std::vector<uint64_t>& bits, std::span<const int32_t> end_ids) const;
  // The same as a copy of `from` into `to` (sizes equal) with apply() on `to`, in one
  // pass: what a sampler that copies the logits anyway pays no more than its copy for.
  bool apply(std::span<const float> from, std::span<float> to, const std::vector<uint64_t>& bits,
             std::span<const int32_t> end_ids) const;
  // The same as mask() without the mask cache (the reference the cache is tested against).
  bool mask_uncached(std::span<float> logits, const TokenTrie& trie, int64_t tokens_left,
                     std::span<const int32_t> end_ids, GrammarScratch& scratch) const;
  // Moves past a sampled token (its trie text). End ids leave the state as is.
  void advance(int32_t id, const TokenTrie& trie, GrammarScratch& scratch);
  // Moves past `bytes` (tests, tools); false when they leave no valid output.
  bool advance_bytes(std::string_view bytes, GrammarScratch& scratch);
  bool complete() const { return grammar_ && position_.can_end; }
  // Complete, and nothing may follow: only the end remains (even with ignore_eos).
  bool finished() const { return complete() && position_.data.empty(); }
  bool alive() const { return grammar_ && position_.alive(); }
  // The fewest bytes that complete the output from here (0: complete).
  int64_t min_bytes_left(GrammarScratch& scratch) const;
  const GrammarPosition& position() const { return position_; }

 private:
  // The allowed tokens at this position (the mask cache's entry, or built in
  // scratch.bits); the grammar's lock held.
  const std::vector<uint64_t>& allowed_bits(const TokenTrie& trie, int64_t tokens_left, GrammarScratch& scratch) const;
  std::shared_ptr<const Grammar> grammar_;
  GrammarPosition position_;
};

}  // namespace plimsoll
