// Token trie construction (sorted texts, preorder) and the masking pass.
#include "engine/grammar/token_trie.h"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>

namespace plimsoll {
namespace {

// An ordinary token to decode after, so each text is the one it has
// mid-sequence (a SentencePiece space is kept, not stripped as after BOS).
int32_t context_token(const TextTokenizer& tok) {
  for (int32_t id = 0; id < static_cast<int32_t>(tok.vocab_size()); ++id) {
    if (!tok.is_special(id) && id != tok.bos_id() && id != tok.eos_id() && !tok.token(id).empty()) return id;
  }
  return -1;
}

}  // namespace

TokenTrie TokenTrie::build(const TextTokenizer& tok) {
  TokenTrie t;
  const auto vocab = static_cast<size_t>(tok.vocab_size());
  const int32_t ctx = context_token(tok);
  t.offsets_.assign(vocab + 1, 0);
  std::string piece;
  for (size_t id = 0; id < vocab; ++id) {
    t.offsets_[id] = static_cast<uint32_t>(t.blob_.size());
    const auto i = static_cast<int32_t>(id);
    if (tok.is_special(i) || i == tok.eos_id() || i == tok.bos_id()) continue;
    piece.clear();
    tok.append_piece_text(ctx, i, &piece);
    if (piece.size() > std::numeric_limits<uint16_t>::max()) continue;
    t.blob_.insert(t.blob_.end(), piece.begin(), piece.end());
  }
  t.offsets_[vocab] = static_cast<uint32_t>(t.blob_.size());
  std::vector<int32_t> order;
  for (size_t id = 0; id < vocab; ++id) {
    if (t.offsets_[id + 1] > t.offsets_[id]) order.push_back(static_cast<int32_t>(id));
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const std::string_view ta = t.text(a), tb = t.text(b);
    return ta != tb ? ta < tb : a < b;
  });
  std::array<bool, 256> single{};
  std::vector<uint32_t> open;  // node index per depth - 1 on the current path
  std::string_view prev;
  for (int32_t id : order) {
    const std::string_view s = t.text(id);
    if (s.size() == 1) single[static_cast<uint8_t>(s[0])] = true;
    size_t lcp = 0;
    while (lcp < s.size() && lcp < prev.size() && lcp < open.size() && s[lcp] == prev[lcp]) ++lcp;
    while (open.size() > lcp) {
      t.end_[open.back()] = static_cast<uint32_t>(t.byte_.size());
      open.pop_back();
    }
    for (size_t d = lcp; d < s.size(); ++d) {
      open.push_back(static_cast<uint32_t>(t.byte_.size()));
      t.byte_.push_back(static_cast<uint8_t>(s[d]));
      t.depth_.push_back(static_cast<uint16_t>(d + 1));
      t.end_.push_back(0);
      t.tok_begin_.push_back(static_cast<uint32_t>(t.tokens_.size()));
    }
    t.tokens_.push_back(id);
    t.max_depth_ = std::max<int64_t>(t.max_depth_, static_cast<int64_t>(s.size()));
    prev = s;
  }
  while (!open.empty()) {
    t.end_[open.back()] = static_cast<uint32_t>(t.byte_.size());
    open.pop_back();
  }
  t.tok_begin_.push_back(static_cast<uint32_t>(t.tokens_.size()));
  t.has_all_bytes_ = std::all_of(single.begin(), single.end(), [](bool b) { return b; });
  return t;
}

std::string_view TokenTrie::text(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) + 1 >= offsets_.size()) return {};
  const auto i = static_cast<size_t>(id);
  return {blob_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]};
}

int64_t TokenTrie::bytes() const {
  return static_cast<int64_t>(byte_.capacity() + depth_.capacity() * 2 + end_.capacity() * 4 +
                              tok_begin_.capacity() * 4 + tokens_.capacity() * 4 + blob_.capacity() +
                              offsets_.capacity() * 4 + sizeof(TokenTrie));
}

void TokenTrie::allowed(const Grammar& g, int32_t state, int64_t budget_bytes, std::vector<int32_t>& out,
                        std::vector<int32_t>& states) const {
  states.resize(static_cast<size_t>(max_depth_) + 1);
  states[0] = state;
  const size_t n = byte_.size();
  size_t i = 0;
  while (i < n) {
    const uint16_t d = depth_[i];
    const int32_t s = g.step(states[d - 1u], byte_[i]);
    if (s < 0) {
      i = end_[i];
      continue;
    }
    states[d] = s;
    if (g.dist_to_accept(s) <= budget_bytes) {
      out.insert(out.end(), tokens_.begin() + tok_begin_[i], tokens_.begin() + tok_begin_[i + 1]);
    }
    ++i;
  }
}

MaskCache::Slot* MaskCache::find(uint64_t grammar_id, int32_t state) {
  for (Slot& s : slots_) {
    if (s.grammar_id == grammar_id && s.state == state) return &s;
  }
  return nullptr;
}

void MaskCache::reserve(size_t vocab) {
  for (Slot& s : slots_) s.bits.reserve((vocab + 63) / 64);
}

void GrammarScratch::reserve(const TokenTrie& trie) {
  const auto vocab = static_cast<size_t>(trie.vocab_size());
  allowed.reserve(vocab + 64);  // + end ids
  kept.reserve(vocab + 64);
  states.reserve(static_cast<size_t>(trie.max_depth()) + 1);
  cache.reserve(vocab);
}

MaskCache::Slot& MaskCache::replace(uint64_t grammar_id, int32_t state, size_t vocab) {
  Slot& s = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  s.grammar_id = grammar_id;
  s.state = state;
  s.bits.assign((vocab + 63) / 64, 0);
  return s;
}

bool GrammarMatcher::mask(std::span<float> logits, const TokenTrie& trie, int64_t tokens_left,
                          std::span<const int32_t> end_ids, GrammarScratch& scratch) const {
  // With this many tokens left, every live state can still be completed: the
  // allowed set depends on the state alone.
  if (tokens_left - 1 < grammar_->max_finite_dist() || !grammar_->alive(state_)) {
    return mask_uncached(logits, trie, tokens_left, end_ids, scratch);
  }
  MaskCache::Slot* slot = scratch.cache.find(grammar_->id(), state_);
  if (slot) {
    ++scratch.cache.hits;
  } else {
    ++scratch.cache.misses;
    scratch.allowed.clear();
    trie.allowed(*grammar_, state_, grammar_->max_finite_dist(), scratch.allowed, scratch.states);
    if (grammar_->accepting(state_)) {
      for (int32_t id : end_ids) {
        if (id >= 0 && static_cast<size_t>(id) < logits.size()) scratch.allowed.push_back(id);
      }
    }
    slot = &scratch.cache.replace(grammar_->id(), state_, logits.size());
    for (int32_t id : scratch.allowed) slot->bits[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    slot->any = !scratch.allowed.empty();
  }
  if (!slot->any) return false;
  constexpr float kRefused = -std::numeric_limits<float>::infinity();
  const size_t n = logits.size();
  for (size_t w = 0; w < slot->bits.size(); ++w) {
    const uint64_t word = slot->bits[w];
    const size_t base = w * 64;
    const size_t end = std::min(n, base + 64);
    if (word == ~uint64_t{0}) continue;
    if (word == 0) {
      std::fill(logits.begin() + static_cast<std::ptrdiff_t>(base), logits.begin() + static_cast<std::ptrdiff_t>(end), kRefused);
      continue;
    }
    for (size_t i = base; i < end; ++i) {
      if (!((word >> (i - base)) & 1)) logits[i] = kRefused;
    }
  }
  return true;
}

bool GrammarMatcher::mask_uncached(std::span<float> logits, const TokenTrie& trie, int64_t tokens_left,
                                   std::span<const int32_t> end_ids, GrammarScratch& scratch) const {
  scratch.allowed.clear();
  if (grammar_->alive(state_)) {
    trie.allowed(*grammar_, state_, std::max<int64_t>(tokens_left - 1, 0), scratch.allowed, scratch.states);
    if (grammar_->accepting(state_)) {
      for (int32_t id : end_ids) {
        if (id >= 0 && static_cast<size_t>(id) < logits.size()) scratch.allowed.push_back(id);
      }
    }
  }
  if (scratch.allowed.empty()) return false;
  scratch.kept.resize(scratch.allowed.size());
  for (size_t k = 0; k < scratch.allowed.size(); ++k) scratch.kept[k] = logits[static_cast<size_t>(scratch.allowed[k])];
  std::fill(logits.begin(), logits.end(), -std::numeric_limits<float>::infinity());
  for (size_t k = 0; k < scratch.allowed.size(); ++k) logits[static_cast<size_t>(scratch.allowed[k])] = scratch.kept[k];
  return true;
}

void GrammarMatcher::advance(int32_t id, const TokenTrie& trie) {
  if (!grammar_) return;
  const std::string_view t = trie.text(id);
  if (t.empty()) return;  // an end id (or a token outside the trie: never allowed)
  for (char c : t) {
    if (state_ < 0) return;
    state_ = grammar_->step(state_, static_cast<uint8_t>(c));
  }
}

}  // namespace plimsoll
