// GrammarMatcher: one sequence's position, its masks (the grammar's mask
// cache, per-frame token classes, the trie walk) and its advance.
#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "engine/grammar/token_trie.h"

namespace plimsoll {
namespace {

// One frame's (dstate, items still needed, items still allowed) clamped to
// `reach`; returns the bytes the clamping hides.
int64_t frame_key(const GrammarLazy& lazy, GFrame f, int64_t reach, std::vector<int32_t>& key) {
  const Grammar& g = lazy.grammar();
  const GrammarLazy::DState& s = lazy.dstate(f.dstate);
  const int32_t rule = s.rule;
  const GrammarRule& r = g.rules()[static_cast<size_t>(rule)];
  if (s.tail) {  // the count no longer matters
    key.insert(key.end(), {s.canon, 0, 0});
    return 0;
  }
  const int64_t need = std::max<int64_t>(0, r.min - (f.count + 1));
  const int64_t room = r.max < 0 ? reach : std::min<int64_t>(reach, r.max - (f.count + 1));
  key.push_back(s.canon);
  key.push_back(static_cast<int32_t>(std::min(need, reach)));
  key.push_back(static_cast<int32_t>(room));
  return need > reach ? (need - reach) * g.next_item_min(rule) : 0;
}

uint64_t hash_key(const std::vector<int32_t>& key, uint64_t seed) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ seed;
  for (int32_t v : key) {
    h ^= static_cast<uint32_t>(v);
    h *= 0x100000001b3ULL;
    h ^= h >> 31;
  }
  return h;
}

// The mask cache's key for a position: per stack, per frame top-down its
// frame_key (clamped to what one token can reach, `reach`); offsets[stack]:
// the bytes the clamping hides.
uint64_t mask_key(const StackWalk& w, const std::vector<GTop>& tops, bool can_end, int64_t reach, uint32_t trie_id,
                  std::vector<int32_t>& key, std::vector<int64_t>& offsets) {
  const GrammarLazy& lazy = const_cast<StackWalk&>(w).lazy();
  key.clear();
  offsets.clear();
  key.push_back(static_cast<int32_t>(trie_id));  // a grammar may be masked over several vocabularies
  key.push_back(can_end ? 1 : 0);
  for (const GTop& t : tops) {
    int64_t off = frame_key(lazy, t.f, reach, key);
    for (int32_t l = t.below; l >= 0; l = w.pool[static_cast<size_t>(l)].below) {
      off += frame_key(lazy, w.pool[static_cast<size_t>(l)].f, reach, key);
    }
    key.push_back(-1);
    offsets.push_back(off);
  }
  return hash_key(key, lazy.grammar().id());
}

// Keeps `local` (its tokens from `accepted`, as a list of ids or a bitset,
// whichever is smaller); the kept copy, or `local` when it does not fit.
const GrammarLazy::FrameClass* finish_class(GrammarLazy& lazy, const TokenTrie& trie,
                                            const std::vector<uint64_t>& accepted, uint64_t h,
                                            GrammarLazy::FrameClass& local) {
  const size_t words = trie.all_bits().size();
  int64_t n_accepted = 0, total = 0;
  for (size_t k = 0; k < words; ++k) {
    n_accepted += std::popcount(accepted[k]);
    total += std::popcount(trie.all_bits()[k]);
  }
  local.refused_list = 2 * n_accepted > total;
  if (std::min(n_accepted, total - n_accepted) * 4 > static_cast<int64_t>(words) * 8) {
    local.refused_list = false;
    local.bits = accepted;
  } else {
    for (size_t k = 0; k < words; ++k) {
      uint64_t word = local.refused_list ? trie.all_bits()[k] & ~accepted[k] : accepted[k];
      for (; word; word &= word - 1) local.ids.push_back(static_cast<int32_t>(k * 64 + static_cast<size_t>(std::countr_zero(word))));
    }
  }
  const GrammarLazy::FrameClass* kept = lazy.keep_class(local, h);
  return kept ? kept : &local;
}

// Sets bits[k] to the tokens k*64.. whose j[] <= r (j padded to whole words).
void tokens_at_most(const std::vector<uint8_t>& j, uint8_t r, std::vector<uint64_t>& bits) {
  const size_t words = bits.size();
#if defined(__SSE2__)
  const __m128i limit = _mm_set1_epi8(static_cast<char>(r));
  for (size_t k = 0; k < words; ++k) {
    uint64_t word = 0;
    for (size_t q = 0; q < 4; ++q) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(j.data() + k * 64 + q * 16));
      const auto m = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(x, limit), x)));
      word |= static_cast<uint64_t>(m & 0xffffu) << (16 * q);
    }
    bits[k] = word;
  }
#else
  for (size_t k = 0; k < words; ++k) {
    uint64_t word = 0;
    for (size_t b = 0; b < 64; ++b) word |= static_cast<uint64_t>(j[k * 64 + b] <= r) << b;
    bits[k] = word;
  }
#endif
}

// Sets c's levels (FrameClass::lv_*) from a class walk's bytes left per
// accepted token (tok_d); none where the values span too far to count.
void build_levels(GrammarLazy::FrameClass& c, const std::vector<uint64_t>& accepted, const std::vector<int32_t>& tok_d,
                  std::vector<int32_t>& count) {
  constexpr int64_t kMaxLevelValue = 1 << 16;
  if (c.maxd > kMaxLevelValue) return;
  count.assign(static_cast<size_t>(c.maxd) + 2, 0);  // value v at v + 1
  const auto for_each_token = [&](auto&& f) {
    for (size_t k = 0; k < accepted.size(); ++k) {
      for (uint64_t word = accepted[k]; word; word &= word - 1) f(k * 64 + static_cast<size_t>(std::countr_zero(word)));
    }
  };
  for_each_token([&](size_t id) { ++count[static_cast<size_t>(tok_d[id] + 1)]; });
  const size_t dom = static_cast<size_t>(std::max_element(count.begin(), count.end()) - count.begin());
  c.lv_dom = static_cast<int32_t>(dom) - 1;
  int32_t at = 0;
  for (size_t v = 0; v < count.size(); ++v) {
    if (v == dom || count[v] == 0) continue;
    c.lv_vals.push_back(static_cast<int32_t>(v) - 1);
    c.lv_at.push_back(at);
    const int32_t n = count[v];
    count[v] = at;  // now the level's write cursor
    at += n;
  }
  c.lv_at.push_back(at);
  c.lv_ids.resize(static_cast<size_t>(at));
  for_each_token([&](size_t id) {
    const auto v = static_cast<size_t>(tok_d[id] + 1);
    if (v != dom) c.lv_ids[static_cast<size_t>(count[v]++)] = static_cast<int32_t>(id);
  });
  c.lv_vals.shrink_to_fit();
  c.has_levels = true;
}

// Walks the trie from top frame `f` alone into `local` (kept under key
// scratch.class_key, hash h). counted_room >= 0: a counted walk (FrameClass::tok_j)
// for every room up to counted_room, f.count the least count that needs no more items.
const GrammarLazy::FrameClass* walk_class(StackWalk& w, GFrame f, int64_t off, uint64_t h, int32_t counted_room,
                                          const TokenTrie& trie, GrammarScratch& scratch, GrammarLazy::FrameClass& local) {
  GrammarLazy& lazy = w.lazy();
  ++lazy.classes_made;
  local = GrammarLazy::FrameClass{};
  local.key = scratch.class_key;
  const size_t words = trie.all_bits().size();
  scratch.class_bits.assign(words, 0);
  const GTop top{f, -1, 0};
  scratch.class_offsets.assign(1, off);
  TokenTrie::WalkOut out{&scratch.class_bits, 0, &local.pops};
  if (counted_room >= 0) {
    local.j_room = counted_room;
    local.tok_j.assign(words * 64, 255);
    local.maxd_j.assign(static_cast<size_t>(counted_room) + 1, 0);
    out.tok_j = &local.tok_j;
    out.pop_j = &local.pop_j;
    out.maxd_j = &local.maxd_j;
    out.base_count = f.count;
  }
  scratch.tok_d.resize(words * 64);
  out.tok_d = &scratch.tok_d;
  const bool was_limited = w.limited;
  const int32_t was_deepest = w.deepest_link;
  w.limited = false;
  w.deepest_link = 0;
  const size_t pool_mark = w.pool.size();
  trie.walk(w, &top, 1, 0, static_cast<size_t>(trie.num_nodes()), 0, Grammar::kUnreachable - 1,
            scratch.class_offsets, out, scratch.walk);
  w.pool.resize(pool_mark);
  local.usable = !w.limited;
  local.frames = w.deepest_link + 1;
  w.limited = was_limited;
  w.deepest_link = std::max(was_deepest, w.deepest_link);
  local.maxd = out.maxd;
  for (size_t r = 1; r < local.maxd_j.size(); ++r) local.maxd_j[r] = std::max(local.maxd_j[r], local.maxd_j[r - 1]);
  if (!out.tok_d_inexact) build_levels(local, scratch.class_bits, scratch.tok_d, scratch.level_count);
  return finish_class(lazy, trie, scratch.class_bits, h, local);
}

// A derived class's levels: the counted class's, kept to its tokens.
void levels_at_most(const GrammarLazy::FrameClass& counted, const std::vector<uint64_t>& tokens,
                    GrammarLazy::FrameClass& out) {
  out.lv_dom = counted.lv_dom;
  for (size_t k = 0; k < counted.lv_vals.size(); ++k) {
    const size_t before = out.lv_ids.size();
    for (int32_t a = counted.lv_at[k]; a < counted.lv_at[k + 1]; ++a) {
      const auto id = static_cast<size_t>(counted.lv_ids[static_cast<size_t>(a)]);
      if (tokens[id >> 6] >> (id & 63) & 1) out.lv_ids.push_back(static_cast<int32_t>(id));
    }
    if (out.lv_ids.size() == before) continue;
    out.lv_vals.push_back(counted.lv_vals[k]);
    out.lv_at.push_back(static_cast<int32_t>(before));
  }
  out.lv_at.push_back(static_cast<int32_t>(out.lv_ids.size()));
  out.lv_ids.shrink_to_fit();
  out.has_levels = true;
}

// The class of top frame `f` (lazily: a walk of the trie from f alone). A
// counted frame within one token of its maximum (a string near maxLength)
// takes its class from the frame's counted class, walked once for all counts.
const GrammarLazy::FrameClass* frame_class(StackWalk& w, GFrame f, const TokenTrie& trie, GrammarScratch& scratch,
                                           GrammarLazy::FrameClass& local, GrammarLazy::FrameClass& counted_local) {
  GrammarLazy& lazy = w.lazy();
  const int64_t reach = trie.max_depth() + 1;
  scratch.class_key.assign(1, static_cast<int32_t>(trie.id()));
  const int64_t off = frame_key(lazy, f, reach, scratch.class_key);
  const uint64_t h = hash_key(scratch.class_key, 0x51);
  if (const GrammarLazy::FrameClass* c = lazy.find_class(scratch.class_key, h)) return c;
  const GrammarLazy::DState& s = lazy.dstate(f.dstate);
  const GrammarRule& r = lazy.grammar().rules()[static_cast<size_t>(s.rule)];
  const int32_t need = scratch.class_key[2], room = scratch.class_key[3];
  if (s.tail || r.max < 0 || need != 0 || room >= reach) return walk_class(w, f, off, h, -1, trie, scratch, local);
  // Items needed 0 from count base on; room then shrinks from counted_room.
  const auto base = static_cast<int32_t>(std::max<int64_t>(0, r.min - 1));
  const auto counted_room = static_cast<int32_t>(std::min<int64_t>(reach, r.max - base - 1));
  // At its first count: its own walk is the class (a later count derives from it only if it is
  // walked counted, so walk counted where later counts exist).
  if (room >= counted_room) return walk_class(w, f, off, h, -1, trie, scratch, local);
  const std::vector<int32_t> key = scratch.class_key;
  scratch.class_key = {static_cast<int32_t>(trie.id()), s.canon, 0, counted_room, -7};
  const uint64_t ch = hash_key(scratch.class_key, 0x51);
  const GrammarLazy::FrameClass* c = lazy.find_class(scratch.class_key, ch);
  if (!c) c = walk_class(w, GFrame{f.dstate, base}, 0, ch, counted_room, trie, scratch, counted_local);
  // The class at `room`: the tokens and pops that restart at most `room` items.
  local = GrammarLazy::FrameClass{};
  local.key = key;
  local.usable = c->usable;
  local.frames = c->frames;
  local.maxd = c->maxd_j[static_cast<size_t>(room)];
  for (size_t k = 0; k < c->pops.size(); ++k) {
    if (c->pop_j[k] <= room) local.pops.push_back(c->pops[k]);
  }
  scratch.class_bits.assign(trie.all_bits().size(), 0);
  tokens_at_most(c->tok_j, static_cast<uint8_t>(room), scratch.class_bits);
  if (c->has_levels) levels_at_most(*c, scratch.class_bits, local);
  ++lazy.classes_derived;
  return finish_class(lazy, trie, scratch.class_bits, h, local);
}

// The class's tokens as a bitset [vocab / 64] in `out`.
void class_tokens(const GrammarLazy::FrameClass& c, const TokenTrie& trie, std::vector<uint64_t>& out) {
  if (!c.bits.empty()) {
    out = c.bits;
  } else if (c.refused_list) {
    out = trie.all_bits();
    for (int32_t id : c.ids) out[static_cast<size_t>(id) >> 6] &= ~(uint64_t{1} << (id & 63));
  } else {
    out.assign(trie.all_bits().size(), 0);
    for (int32_t id : c.ids) out[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  }
}

// Keeps in `tokens` (the class's) those whose level fits: a level v >= 0
// where v <= room_bytes, the popping level (-1) where pop_fits.
void filter_levels(const GrammarLazy::FrameClass& c, int64_t room_bytes, bool pop_fits, std::vector<uint64_t>& tokens) {
  const auto fits = [&](int32_t v) { return v < 0 ? pop_fits : v <= room_bytes; };
  const bool dom_fits = fits(c.lv_dom);
  if (!dom_fits) std::fill(tokens.begin(), tokens.end(), 0);
  for (size_t k = 0; k < c.lv_vals.size(); ++k) {
    const bool keep = fits(c.lv_vals[k]);
    if (keep != dom_fits) {
      for (int32_t a = c.lv_at[k]; a < c.lv_at[k + 1]; ++a) {
        const auto id = static_cast<size_t>(c.lv_ids[static_cast<size_t>(a)]);
        if (keep) {
          tokens[id >> 6] |= uint64_t{1} << (id & 63);
        } else {
          tokens[id >> 6] &= ~(uint64_t{1} << (id & 63));
        }
      }
    }
  }
}

// The mask of the position's tops from their frames' classes: each class's
// tokens, plus the walks after each pop against the frames below; with a
// length budget (budget_bytes < Grammar::kUnreachable - 1) only the tokens
// that leave at most budget_bytes, each class filtered by its levels. False
// where the classes cannot be trusted (a limit reached in a class walk, a
// stack too deep for what its class walk pushed, or a budget that binds a class
// without levels): the caller walks the whole trie instead.
bool mask_by_classes(StackWalk& w, const std::vector<GTop>& tops, const TokenTrie& trie, int64_t budget_bytes,
                     GrammarScratch& scratch, std::vector<uint64_t>& bits, int64_t& maxd) {
  const int64_t max_depth = w.lazy().grammar().limits().max_stack_depth;
  GrammarLazy::FrameClass local, counted_local;
  for (const GTop& t : tops) {
    const GrammarLazy::FrameClass* c = frame_class(w, t.f, trie, scratch, local, counted_local);
    if (!c->usable || w.depth(t) - 1 + c->frames > max_depth) return false;
    scratch.class_key.clear();
    const int64_t off_top = frame_key(w.lazy(), t.f, trie.max_depth() + 1, scratch.class_key);
    const int64_t below = t.below < 0 ? 0 : w.pool[static_cast<size_t>(t.below)].cum;
    const bool binds = c->maxd + off_top + below > budget_bytes;
    if (binds && !c->has_levels) return false;
    if (!binds && !c->bits.empty()) {
      for (size_t k = 0; k < bits.size(); ++k) bits[k] |= c->bits[k];
    } else if (!binds && !c->refused_list) {
      for (int32_t id : c->ids) bits[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    } else {
      class_tokens(*c, trie, scratch.class_bits);
      if (binds) filter_levels(*c, budget_bytes - off_top - below, below <= budget_bytes, scratch.class_bits);
      for (size_t k = 0; k < bits.size(); ++k) bits[k] |= scratch.class_bits[k];
    }
    maxd = std::max(maxd, c->maxd + off_top + below - scratch.offsets[static_cast<size_t>(t.origin)]);
    if (t.below < 0 || c->pops.empty()) continue;
    // Walks below may make DFA states (and drop the classes): copy the pops.
    scratch.pops.assign(c->pops.begin(), c->pops.end());
    const GLink& l = w.pool[static_cast<size_t>(t.below)];
    scratch.next.assign(1, GTop{l.f, l.below, t.origin});
    scratch.context.clear();
    w.close(scratch.next, scratch.context, 0);
    if (scratch.context.empty()) continue;
    for (uint32_t p : scratch.pops) {
      TokenTrie::WalkOut out{&bits, maxd, nullptr};
      trie.walk(w, scratch.context.data(), scratch.context.size(), p + 1, trie.subtree_end(p), trie.depth(p),
                budget_bytes, scratch.offsets, out, scratch.walk);
      maxd = std::max(maxd, out.maxd);
    }
  }
  return true;
}

constexpr int64_t kNoBudget = Grammar::kUnreachable - 1;

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
  return apply(logits, logits, bits, end_ids);
}

namespace {

// to[i] := from[i] where bit i of `word` is set, else -inf, for one word's 64 ids
// (from may be to: each element is read before it is written).
void masked_copy_word(const float* from, float* to, uint64_t word) {
  constexpr float kRefused = -std::numeric_limits<float>::infinity();
#if defined(__SSE2__)
  struct Lanes {
    alignas(16) uint32_t v[16][4];
  };
  static const Lanes lanes = [] {
    Lanes t{};
    for (int m = 0; m < 16; ++m) {
      for (int k = 0; k < 4; ++k) t.v[m][k] = (m >> k) & 1 ? ~0u : 0u;
    }
    return t;
  }();
  const __m128 refused = _mm_set1_ps(kRefused);
  for (size_t q = 0; q < 16; ++q) {
    const auto m = static_cast<size_t>((word >> (4 * q)) & 15);
    const __m128 keep = _mm_load_ps(reinterpret_cast<const float*>(lanes.v[m]));
    const __m128 v = _mm_loadu_ps(from + 4 * q);
    _mm_storeu_ps(to + 4 * q, _mm_or_ps(_mm_and_ps(keep, v), _mm_andnot_ps(keep, refused)));
  }
#else
  for (size_t i = 0; i < 64; ++i) to[i] = (word >> i) & 1 ? from[i] : kRefused;
#endif
}

}  // namespace

bool GrammarMatcher::apply(std::span<const float> from, std::span<float> to, const std::vector<uint64_t>& bits,
                           std::span<const int32_t> end_ids) const {
  const size_t n = std::min(from.size(), to.size());
  bool ends = false;
  if (position_.can_end) {
    for (int32_t id : end_ids) ends = ends || (id >= 0 && static_cast<size_t>(id) < n);
  }
  if (!ends && !any_bit(bits)) return false;
  constexpr float kRefused = -std::numeric_limits<float>::infinity();
  const bool in_place = from.data() == to.data();
  float saved[8];  // the end ids' logits (read before an in-place pass refuses them)
  size_t n_saved = 0;
  for (int32_t id : end_ids) {
    if (ends && id >= 0 && static_cast<size_t>(id) < n && n_saved < 8) saved[n_saved++] = from[static_cast<size_t>(id)];
  }
  const size_t whole = std::min(bits.size(), n / 64);  // words covering 64 ids each
  for (size_t w = 0; w < whole; ++w) {
    const uint64_t word = bits[w];
    const float* src = from.data() + w * 64;
    float* dst = to.data() + w * 64;
    if (word == ~uint64_t{0}) {
      if (!in_place) std::copy_n(src, 64, dst);
    } else if (word == 0) {
      std::fill_n(dst, 64, kRefused);
    } else if (in_place && std::popcount(~word) <= 12) {
      for (uint64_t z = ~word; z; z &= z - 1) dst[std::countr_zero(z)] = kRefused;  // few refused: one store each
    } else {
      masked_copy_word(src, dst, word);
    }
  }
  for (size_t i = whole * 64; i < n; ++i) {
    const size_t w = i / 64;
    to[i] = w < bits.size() && (bits[w] >> (i & 63)) & 1 ? from[i] : kRefused;
  }
  n_saved = 0;
  for (int32_t id : end_ids) {
    if (ends && id >= 0 && static_cast<size_t>(id) < n && n_saved < 8) to[static_cast<size_t>(id)] = saved[n_saved++];
  }
  return true;
}

bool GrammarMatcher::mask(std::span<float> logits, const TokenTrie& trie, int64_t tokens_left,
                          std::span<const int32_t> end_ids, GrammarScratch& scratch) const {
  if (!position_.alive()) return false;
  const auto lock = grammar_->lazy().lock();
  return apply(logits, allowed_bits(trie, tokens_left, scratch), end_ids);
}

bool GrammarMatcher::fill(const TokenTrie& trie, int64_t tokens_left, GrammarScratch& scratch,
                          std::vector<uint64_t>& bits) const {
  if (!position_.alive()) return false;
  const auto lock = grammar_->lazy().lock();
  const std::vector<uint64_t>& allowed = allowed_bits(trie, tokens_left, scratch);
  bits.assign(allowed.begin(), allowed.end());
  return true;
}

const std::vector<uint64_t>& GrammarMatcher::allowed_bits(const TokenTrie& trie, int64_t tokens_left,
                                                          GrammarScratch& scratch) const {
  GrammarLazy& lazy = grammar_->lazy();
  StackWalk w(lazy, scratch.stack);
  w.load(position_, scratch.tops);
  const uint64_t h = mask_key(w, scratch.tops, position_.can_end, trie.max_depth() + 1, trie.id(),
                              scratch.key, scratch.offsets);
  const int64_t max_off =
      scratch.offsets.empty() ? 0 : *std::max_element(scratch.offsets.begin(), scratch.offsets.end());
  const int64_t budget = std::max<int64_t>(tokens_left - 1, 0);
  const size_t words = (static_cast<size_t>(trie.vocab_size()) + 63) / 64;
  const GrammarLazy::MaskEntry* e = lazy.find_mask(scratch.key, h);
  if (e && e->maxd + max_off <= budget) {
    ++lazy.mask_hits;
    return e->bits;
  }
  if (!e) {
    ++lazy.mask_misses;
    scratch.bits.assign(words, 0);
    int64_t maxd = 0;
    if (!mask_by_classes(w, scratch.tops, trie, kNoBudget, scratch, scratch.bits, maxd)) {
      scratch.bits.assign(words, 0);
      maxd = 0;
      trie.allowed(w, scratch.tops, kNoBudget, scratch.offsets, scratch.bits, maxd, scratch.walk);
    }
    if (!w.limited) {
      GrammarLazy::MaskEntry entry;
      entry.key = scratch.key;
      entry.bits = scratch.bits;
      entry.maxd = maxd;
      entry.any = any_bit(scratch.bits);
      lazy.keep_mask(std::move(entry), h);
    }
    if (maxd + max_off <= budget) return scratch.bits;
  }
  // The length budget may bind: the tokens that leave at most `budget` bytes.
  ++lazy.budget_masks;
  int64_t maxd = 0;
  scratch.bits.assign(words, 0);
  w.pool.resize(0);
  w.load(position_, scratch.tops);
  if (!mask_by_classes(w, scratch.tops, trie, budget, scratch, scratch.bits, maxd)) {
    ++lazy.budget_walks;
    scratch.bits.assign(words, 0);
    w.pool.resize(0);
    w.load(position_, scratch.tops);
    trie.allowed(w, scratch.tops, budget, scratch.offsets, scratch.bits, maxd, scratch.walk);
  }
  return scratch.bits;
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
