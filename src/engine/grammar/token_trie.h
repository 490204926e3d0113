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
#include "tokenizer/text_tokenizer.h"

namespace plimsoll {

class TokenTrie {
 public:
  // Built once per tokenizer: every non-special token with a non-empty text
  // (its text in the middle of a sequence, after an ordinary token).
  static TokenTrie build(const TextTokenizer& tokenizer);

  // Appends to `out` the tokens whose bytes keep `grammar` alive from `state`
  // and end in a state at most `budget_bytes` bytes from acceptance.
  // `states`: scratch.
  void allowed(const Grammar& grammar, int32_t state, int64_t budget_bytes, std::vector<int32_t>& out,
               std::vector<int32_t>& states) const;
  // The bytes the trie holds for `id` ("" when it is not in the trie).
  std::string_view text(int32_t id) const;
  // Every single byte is some token's text: any grammar can be completed one
  // byte per token, so the length budget below always suffices.
  bool has_all_bytes() const { return has_all_bytes_; }
  int64_t num_nodes() const { return static_cast<int64_t>(byte_.size()); }
  int64_t vocab_size() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  int64_t max_depth() const { return max_depth_; }
  int64_t bytes() const;

 private:
  std::vector<uint8_t> byte_;        // [nodes] the node's byte
  std::vector<uint16_t> depth_;      // [nodes] 1 = a child of the root
  std::vector<uint32_t> end_;        // [nodes] the first node after its subtree
  std::vector<uint32_t> tok_begin_;  // [nodes + 1] its tokens: tokens_[tok_begin_[i], tok_begin_[i+1])
  std::vector<int32_t> tokens_;
  std::vector<char> blob_;           // every token's text
  std::vector<uint32_t> offsets_;    // [vocab + 1] into blob_
  int64_t max_depth_ = 0;
  bool has_all_bytes_ = false;
};

// The allowed tokens of the last few (grammar, state) pairs as bitsets over
// the vocabulary, for steps where the length budget cannot bind (most of
// them): inside a string or a number the state repeats, and its mask is then
// one pass over the logits instead of a trie walk. Fixed size: `entries` x
// vocab / 8 bytes, replaced round robin.
class MaskCache {
 public:
  explicit MaskCache(size_t entries = 16) : slots_(entries) {}
  struct Slot {
    uint64_t grammar_id = 0;  // 0: empty
    int32_t state = -1;
    bool any = false;         // some token is allowed
    std::vector<uint64_t> bits;
  };
  Slot* find(uint64_t grammar_id, int32_t state);
  Slot& replace(uint64_t grammar_id, int32_t state, size_t vocab);
  // Sizes every slot for `vocab` now, so masking never allocates.
  void reserve(size_t vocab);
  int64_t hits = 0;
  int64_t misses = 0;

 private:
  std::vector<Slot> slots_;
  size_t next_ = 0;
};

// Reusable buffers of the masking pass (one per engine thread), sized for the
// trie's vocabulary at start-up (~12.5 B per vocabulary entry): masking then
// allocates nothing while serving.
struct GrammarScratch {
  std::vector<int32_t> allowed;  // [<= vocab]
  std::vector<int32_t> states;   // [max_depth + 1]
  std::vector<float> kept;       // [<= vocab]
  MaskCache cache;
  void reserve(const TokenTrie& trie);
};

class GrammarMatcher {
 public:
  GrammarMatcher() = default;
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar)
      : grammar_(std::move(grammar)), state_(grammar_ ? grammar_->start() : Grammar::kDead) {}

  bool active() const { return grammar_ != nullptr; }
  // Sets every logit the grammar refuses to -inf: tokens that cannot continue
  // a valid output, or whose output could no longer be completed within
  // `tokens_left` (this one included; one byte per later token), and the end
  // ids unless the output so far is complete. Returns false when nothing at
  // all is allowed (the vocabulary cannot spell what the grammar needs).
  bool mask(std::span<float> logits, const TokenTrie& trie, int64_t tokens_left, std::span<const int32_t> end_ids,
            GrammarScratch& scratch) const;
  // The same without the mask cache (the reference the cache is tested against).
  bool mask_uncached(std::span<float> logits, const TokenTrie& trie, int64_t tokens_left,
                     std::span<const int32_t> end_ids, GrammarScratch& scratch) const;
  // Moves past a sampled token (its trie text). End ids leave the state as is.
  void advance(int32_t id, const TokenTrie& trie);
  bool complete() const { return grammar_ && grammar_->alive(state_) && grammar_->accepting(state_); }
  // Complete, and nothing may follow: only the end remains (even with ignore_eos).
  bool finished() const { return complete() && grammar_->finished(state_); }
  int32_t state() const { return state_; }

 private:
  std::shared_ptr<const Grammar> grammar_;
  int32_t state_ = Grammar::kDead;
};

}  // namespace plimsoll
