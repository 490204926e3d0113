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

void TokenTrie::allowed(StackWalk& w, const std::vector<GTop>& tops, int64_t budget_bytes,
                        const std::vector<int64_t>& offsets, std::vector<uint64_t>& bits, int64_t& maxd,
                        WalkBuffers& b) const {
  const auto max_stacks = static_cast<size_t>(w.lazy().grammar().limits().max_stacks);
  const auto levels = static_cast<size_t>(max_depth_) + 1;
  b.sets.clear();
  // step() appends at most max_stacks per level: no reallocation while a
  // level's parent is read through a pointer.
  b.sets.reserve(levels * max_stacks + tops.size());
  b.set_at.resize(levels);
  b.set_len.resize(levels);
  b.pool_at.resize(levels);
  b.sets.assign(tops.begin(), tops.end());
  b.set_at[0] = 0;
  b.set_len[0] = static_cast<uint32_t>(tops.size());
  b.pool_at[0] = w.pool.size();
  maxd = 0;
  const size_t n = byte_.size();
  size_t i = 0;
  while (i < n) {
    const size_t d = depth_[i];
    const size_t parent_end = b.set_at[d - 1] + b.set_len[d - 1];
    b.sets.resize(parent_end);
    w.pool.resize(b.pool_at[d - 1]);
    b.set_at[d] = static_cast<uint32_t>(parent_end);
    const bool can_end = w.step(b.sets.data() + b.set_at[d - 1], b.set_len[d - 1], byte_[i], b.sets);
    b.set_len[d] = static_cast<uint32_t>(b.sets.size() - parent_end);
    b.pool_at[d] = w.pool.size();
    if (b.set_len[d] == 0 && !can_end) {
      i = end_[i];
      continue;
    }
    if (tok_begin_[i] < tok_begin_[i + 1]) {
      int64_t left = can_end ? 0 : Grammar::kUnreachable;
      int64_t left_clamped = left;
      for (size_t k = parent_end; k < b.sets.size(); ++k) {
        const int64_t dk = w.dist(b.sets[k]);
        left = std::min(left, dk);
        left_clamped = std::min(left_clamped, dk - offsets[static_cast<size_t>(b.sets[k].origin)]);
      }
      if (left <= budget_bytes) {
        maxd = std::max(maxd, left_clamped);
        for (uint32_t t = tok_begin_[i]; t < tok_begin_[i + 1]; ++t) {
          const auto id = static_cast<size_t>(tokens_[t]);
          bits[id >> 6] |= uint64_t{1} << (id & 63);
        }
      }
    }
    i = b.set_len[d] == 0 ? end_[i] : i + 1;
  }
}

void GrammarScratch::reserve(const TokenTrie& trie) {
  const auto vocab = static_cast<size_t>(trie.vocab_size());
  const GrammarLimits limits;
  const auto stacks = static_cast<size_t>(limits.max_stacks);
  const auto levels = static_cast<size_t>(trie.max_depth()) + 1;
  allowed.reserve(vocab + 64);  // + end ids
  kept.reserve(vocab + 64);
  bits.reserve((vocab + 63) / 64);
  tops.reserve(stacks);
  next.reserve(stacks);
  offsets.reserve(stacks);
  key.reserve(stacks * 16);
  stack.pool.reserve(levels * stacks * 4 + stacks * static_cast<size_t>(limits.max_stack_depth));
  stack.work.reserve(stacks * 8);
  stack.seen.reserve(stacks * 8);
  stack.seeds.reserve(stacks);
  walk.sets.reserve(levels * stacks);
  walk.set_at.reserve(levels);
  walk.set_len.reserve(levels);
  walk.pool_at.reserve(levels);
}

namespace {

// The mask cache's key for a position: per stack, per frame top-down its DFA
// state and its rule's items still needed / still allowed, clamped to what one
// token can reach (`reach`); offsets[stack]: the bytes the clamping hides.
uint64_t mask_key(const StackWalk& w, const std::vector<GTop>& tops, bool can_end, int64_t reach,
                  std::vector<int32_t>& key, std::vector<int64_t>& offsets) {
  const GrammarLazy& lazy = const_cast<StackWalk&>(w).lazy();
  const Grammar& g = lazy.grammar();
  key.clear();
  offsets.clear();
  key.push_back(can_end ? 1 : 0);
  auto add = [&](GFrame f, int64_t& off) {
    const int32_t rule = lazy.dstate(f.dstate).rule;
    const GrammarRule& r = g.rules()[static_cast<size_t>(rule)];
    const int64_t need = std::max<int64_t>(0, r.min - (f.count + 1));
    const int64_t room = r.max < 0 ? reach : std::min<int64_t>(reach, r.max - (f.count + 1));
    key.push_back(f.dstate);
    key.push_back(static_cast<int32_t>(std::min(need, reach)));
    key.push_back(static_cast<int32_t>(room));
    if (need > reach) off += (need - reach) * g.next_item_min(rule);
  };
  for (const GTop& t : tops) {
    int64_t off = 0;
    add(t.f, off);
    for (int32_t l = t.below; l >= 0; l = w.pool[static_cast<size_t>(l)].below) add(w.pool[static_cast<size_t>(l)].f, off);
    key.push_back(-1);
    offsets.push_back(off);
  }
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ g.id();
  for (int32_t v : key) {
    h ^= static_cast<uint32_t>(v);
    h *= 0x100000001b3ULL;
    h ^= h >> 31;
  }
  return h;
}

bool any_bit(const std::vector<uint64_t>& bits) {
  return std::any_of(bits.begin(), bits.end(), [](uint64_t w) { return w != 0; });
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  if (!grammar_) return;
  StackBuffers buffers;
  std::vector<GTop> tops;
  const auto lock = grammar_->lazy().lock();
  StackWalk w(grammar_->lazy(), buffers);
  bool can_end = false;
  w.start(tops, can_end);
  w.save(tops.data(), tops.size(), can_end, position_);
}

bool GrammarMatcher::apply(std::span<float> logits, const std::vector<uint64_t>& bits,
                           std::span<const int32_t> end_ids) const {
  bool ends = false;
  if (position_.can_end) {
    for (int32_t id : end_ids) ends = ends || (id >= 0 && static_cast<size_t>(id) < logits.size());
  }
  if (!ends && !any_bit(bits)) return false;
  constexpr float kRefused = -std::numeric_limits<float>::infinity();
  const size_t n = logits.size();
  float saved[8];
  size_t n_saved = 0;
  for (int32_t id : end_ids) {
    if (ends && id >= 0 && static_cast<size_t>(id) < n && n_saved < 8) saved[n_saved++] = logits[static_cast<size_t>(id)];
  }
  for (size_t w = 0; w < bits.size() && w * 64 < n; ++w) {
    const uint64_t word = bits[w];
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
  for (size_t i = bits.size() * 64; i < n; ++i) logits[i] = kRefused;
  n_saved = 0;
  for (int32_t id : end_ids) {
    if (ends && id >= 0 && static_cast<size_t>(id) < n && n_saved < 8) logits[static_cast<size_t>(id)] = saved[n_saved++];
  }
  return true;
}

bool GrammarMatcher::mask(std::span<float> logits, const TokenTrie& trie, int64_t tokens_left,
                          std::span<const int32_t> end_ids, GrammarScratch& scratch) const {
  if (!position_.alive()) return false;
  GrammarLazy& lazy = grammar_->lazy();
  const auto lock = lazy.lock();
  StackWalk w(lazy, scratch.stack);
  w.load(position_, scratch.tops);
  const uint64_t h = mask_key(w, scratch.tops, position_.can_end, trie.max_depth() + 1, scratch.key, scratch.offsets);
  const int64_t max_off =
      scratch.offsets.empty() ? 0 : *std::max_element(scratch.offsets.begin(), scratch.offsets.end());
  const int64_t budget = std::max<int64_t>(tokens_left - 1, 0);
  if (const GrammarLazy::MaskEntry* e = lazy.find_mask(scratch.key, h); e && e->maxd + max_off <= budget) {
    ++lazy.mask_hits;
    return apply(logits, e->bits, end_ids);
  }
  ++lazy.mask_misses;
  const size_t words = (static_cast<size_t>(trie.vocab_size()) + 63) / 64;
  scratch.bits.assign(words, 0);
  int64_t maxd = 0;
  trie.allowed(w, scratch.tops, Grammar::kUnreachable - 1, scratch.offsets, scratch.bits, maxd, scratch.walk);
  if (!w.limited) {
    GrammarLazy::MaskEntry entry;
    entry.key = scratch.key;
    entry.bits = scratch.bits;
    entry.maxd = maxd;
    entry.any = any_bit(scratch.bits);
    lazy.keep_mask(std::move(entry), h);
  }
  if (maxd + max_off <= budget) return apply(logits, scratch.bits, end_ids);
  scratch.bits.assign(words, 0);
  w.pool.resize(0);
  w.load(position_, scratch.tops);
  trie.allowed(w, scratch.tops, budget, scratch.offsets, scratch.bits, maxd, scratch.walk);
  return apply(logits, scratch.bits, end_ids);
}

bool GrammarMatcher::mask_uncached(std::span<float> logits, const TokenTrie& trie, int64_t tokens_left,
                                   std::span<const int32_t> end_ids, GrammarScratch& scratch) const {
  if (!position_.alive()) return false;
  GrammarLazy& lazy = grammar_->lazy();
  const auto lock = lazy.lock();
  StackWalk w(lazy, scratch.stack);
  w.load(position_, scratch.tops);
  scratch.offsets.assign(scratch.tops.size(), 0);
  scratch.bits.assign((static_cast<size_t>(trie.vocab_size()) + 63) / 64, 0);
  int64_t maxd = 0;
  trie.allowed(w, scratch.tops, std::max<int64_t>(tokens_left - 1, 0), scratch.offsets, scratch.bits, maxd,
               scratch.walk);
  return apply(logits, scratch.bits, end_ids);
}

bool GrammarMatcher::advance_bytes(std::string_view bytes, GrammarScratch& scratch) {
  if (!grammar_ || bytes.empty()) return position_.alive();
  GrammarLazy& lazy = grammar_->lazy();
  const auto lock = lazy.lock();
  StackWalk w(lazy, scratch.stack);
  w.load(position_, scratch.tops);
  bool can_end = false;
  for (char c : bytes) {
    scratch.next.clear();
    can_end = w.step(scratch.tops.data(), scratch.tops.size(), static_cast<uint8_t>(c), scratch.next);
    std::swap(scratch.tops, scratch.next);
    if (scratch.tops.empty() && !can_end) break;
  }
  if (scratch.tops.empty() && !can_end) {
    position_ = GrammarPosition{};
    return false;
  }
  w.save(scratch.tops.data(), scratch.tops.size(), can_end, position_);
  return true;
}

int64_t GrammarMatcher::min_bytes_left(GrammarScratch& scratch) const {
  if (!grammar_ || !position_.alive()) return Grammar::kUnreachable;
  if (position_.can_end) return 0;
  const auto lock = grammar_->lazy().lock();
  StackWalk w(grammar_->lazy(), scratch.stack);
  w.load(position_, scratch.tops);
  int64_t best = Grammar::kUnreachable;
  for (const GTop& t : scratch.tops) best = std::min(best, w.dist(t));
  return best;
}

void GrammarMatcher::advance(int32_t id, const TokenTrie& trie, GrammarScratch& scratch) {
  if (!grammar_) return;
  const std::string_view t = trie.text(id);
  if (t.empty()) return;  // an end id (or a token outside the trie: never allowed)
  advance_bytes(t, scratch);
}

}  // namespace plimsoll
