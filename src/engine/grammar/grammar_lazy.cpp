// Lazy rule DFAs, the mask cache, and stepping sets of stacks.
#include "engine/grammar/grammar_lazy.h"

#include <algorithm>

namespace plimsoll {
namespace {

constexpr int32_t kNotMade = -2;
// A DFA state's fixed bytes beside its set and calls: the struct and its
// row of 256 transitions, each twice (their vectors double: old and new
// buffers exist at once), a hash-map node.
constexpr int64_t kDStateBytes = 2 * (static_cast<int64_t>(sizeof(GrammarLazy::DState)) + 256 * 4) + 64;
// A mask entry's bytes beside its key and bits (vectors, index node).
constexpr int64_t kMaskEntryBytes = 160;

uint64_t hash_ints(const int32_t* p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<uint32_t>(p[i]);
    h *= 0x100000001b3ULL;
    h ^= h >> 29;
  }
  return h;
}

}  // namespace

GrammarLazy::GrammarLazy(const Grammar& g) : g_(g) {
  first_.assign(g.rules().size(), kNotMade);
  next_start_.assign(g.rules().size(), kNotMade);
  tail_start_.assign(g.rules().size(), kNotMade);
  mark_.assign(static_cast<size_t>(g.num_nfa_states()), 0);
}

int64_t GrammarLazy::fixed_bytes(const Grammar& g) {
  return static_cast<int64_t>(sizeof(GrammarLazy)) + g.num_rules() * 12 + g.num_nfa_states() * 4 + 256;
}

bool GrammarLazy::charge_dfa(int64_t bytes) {
  if (!make_room(bytes)) {
    exhausted = true;
    return false;
  }
  dfa_bytes_ += bytes;
  return true;
}

void GrammarLazy::drop_masks() {
  if (!masks_.empty() || !classes_.empty()) ++mask_drops;
  masks_.clear();
  masks_.shrink_to_fit();
  mask_index_.clear();
  mask_bytes_ = 0;
  classes_.clear();
  class_index_.clear();
  class_bytes_ = 0;
}

// Makes room for `bytes` more: the position masks first (cheap to rebuild
// from the classes), then the classes too. False when even that is not enough.
bool GrammarLazy::make_room(int64_t bytes) {
  const int64_t budget = g_.limits().max_lazy_bytes;
  if (used_bytes() + bytes <= budget) return true;
  if (!masks_.empty()) {
    ++mask_drops;
    masks_.clear();
    masks_.shrink_to_fit();
    mask_index_.clear();
    mask_bytes_ = 0;
  }
  if (used_bytes() + bytes <= budget) return true;
  drop_masks();
  return used_bytes() + bytes <= budget;
}

// The closure of `seeds` within `rule` (calls are not followed: they are the
// frames' business), minus states that cannot reach the item's end; interned.
int32_t GrammarLazy::intern(std::vector<int32_t>& seeds, int32_t rule) {
  ++generation_;
  todo_.clear();
  std::vector<int32_t>& set = seeds_;
  set.clear();
  for (int32_t s : seeds) todo_.push_back(s);
  while (!todo_.empty()) {
    const int32_t s = todo_.back();
    todo_.pop_back();
    if (mark_[static_cast<size_t>(s)] == generation_) continue;
    mark_[static_cast<size_t>(s)] = generation_;
    if (g_.dist(s) >= Grammar::kUnreachable) continue;
    set.push_back(s);
    for (int32_t t : g_.eps(s)) todo_.push_back(t);
  }
  if (set.empty()) return -1;
  std::sort(set.begin(), set.end());
  const uint64_t h = hash_ints(set.data(), set.size(), 0xcbf29ce484222325ULL ^ static_cast<uint64_t>(rule));
  const auto it = by_hash_.find(h);
  int32_t chain = -1;
  if (it != by_hash_.end()) {
    for (int32_t d = it->second; d >= 0; d = states_[static_cast<size_t>(d)].chain) {
      const DState& s = states_[static_cast<size_t>(d)];
      if (s.rule == rule && s.set_len == set.size() && std::equal(set.begin(), set.end(), sets_.begin() + s.set_at)) return d;
    }
    chain = it->second;
  }
  DState st;
  st.rule = rule;
  st.dist = Grammar::kUnreachable;
  st.set_at = static_cast<uint32_t>(sets_.size());
  st.set_len = static_cast<uint32_t>(set.size());
  st.calls_at = static_cast<uint32_t>(calls_.size());
  int64_t n_calls = 0;
  for (int32_t s : set) n_calls += static_cast<int64_t>(g_.calls(s).end() - g_.calls(s).begin());
  // Vectors may double: count their growth as the full new capacity.
  if (!charge_dfa(kDStateBytes + static_cast<int64_t>(set.size()) * 8 + n_calls * 32)) return -1;
  const GrammarRule& r = g_.rules()[static_cast<size_t>(rule)];
  calls_tmp_.clear();
  for (int32_t s : set) {
    sets_.push_back(s);
    st.dist = std::min(st.dist, g_.dist(s));
    if (s == r.end) st.item_end = true;
    if (s == r.tail_end) st.rule_end = true;
    if (g_.edges(s).begin() != g_.edges(s).end()) st.has_bytes = true;
    for (const Nfa::Call& c : g_.calls(s)) {
      if (g_.rule_min(c.rule) >= Grammar::kUnreachable || g_.dist(c.to) >= Grammar::kUnreachable) continue;
      calls_tmp_.push_back(c);
    }
  }
  // One call per callee, returning to all of its return states.
  std::sort(calls_tmp_.begin(), calls_tmp_.end(),
            [](const Nfa::Call& a, const Nfa::Call& b) { return a.rule != b.rule ? a.rule < b.rule : a.to < b.to; });
  for (size_t k = 0; k < calls_tmp_.size();) {
    DCall dc{calls_tmp_[k].rule, static_cast<uint32_t>(sets_.size()), 0, kNotMade};
    for (; k < calls_tmp_.size() && calls_tmp_[k].rule == dc.rule; ++k) sets_.push_back(calls_tmp_[k].to);
    dc.ret_len = static_cast<uint32_t>(sets_.size() - dc.ret_at);
    calls_.push_back(dc);
  }
  st.calls_len = static_cast<uint32_t>(calls_.size() - st.calls_at);
  st.tail = g_.in_tail(set[0]);
  st.row = static_cast<int32_t>(states_.size());
  st.chain = chain;
  next_.insert(next_.end(), 256, kNotMade);
  const auto id = static_cast<int32_t>(states_.size());
  st.canon = id;
  states_.push_back(st);
  by_hash_[h] = id;
  const int32_t canonical = g_.canonical_rule(rule);
  if (canonical != rule) {
    std::vector<int32_t> mapped(sets_.begin() + st.set_at, sets_.begin() + st.set_at + st.set_len);
    for (int32_t& s : mapped) s = g_.canonical_state(s);
    const int32_t c = intern(mapped, canonical);
    if (c >= 0) states_[static_cast<size_t>(id)].canon = states_[static_cast<size_t>(c)].canon;
  }
  return id;
}

int32_t GrammarLazy::start(int32_t rule, bool first) {
  int32_t& slot = (first ? first_ : next_start_)[static_cast<size_t>(rule)];
  if (slot != kNotMade) return slot;
  const GrammarRule& r = g_.rules()[static_cast<size_t>(rule)];
  std::vector<int32_t> seeds = {first ? r.first : r.next};
  const int32_t d = intern(seeds, rule);
  if (d >= 0 || !exhausted) slot = d;  // a refusal for the budget is not remembered
  return d;
}

int32_t GrammarLazy::start_tail(int32_t rule) {
  int32_t& slot = tail_start_[static_cast<size_t>(rule)];
  if (slot != kNotMade) return slot;
  std::vector<int32_t> seeds = {g_.rules()[static_cast<size_t>(rule)].tail};
  const int32_t d = intern(seeds, rule);
  if (d >= 0 || !exhausted) slot = d;
  return d;
}

int32_t GrammarLazy::step_slow(int32_t d, uint8_t byte) {
  const size_t at = static_cast<size_t>(states_[static_cast<size_t>(d)].row) * 256 + byte;
  const DState s = states_[static_cast<size_t>(d)];
  std::vector<int32_t> seeds;
  for (uint32_t i = 0; i < s.set_len; ++i) {
    for (const Nfa::Edge& e : g_.edges(sets_[s.set_at + i])) {
      if (e.lo <= byte && byte <= e.hi) seeds.push_back(e.to);
    }
  }
  const int32_t to = seeds.empty() ? -1 : intern(seeds, s.rule);
  if (to >= 0 || seeds.empty() || !exhausted) next_[at] = to;
  return to;
}

int32_t GrammarLazy::call_return(const DState& s, uint32_t k) {
  const size_t at = s.calls_at + k;
  if (calls_[at].ret != kNotMade) return calls_[at].ret;
  std::vector<int32_t> seeds(sets_.begin() + calls_[at].ret_at, sets_.begin() + calls_[at].ret_at + calls_[at].ret_len);
  const int32_t d = intern(seeds, s.rule);
  if (d >= 0 || !exhausted) calls_[at].ret = d;
  return d;
}

const GrammarLazy::MaskEntry* GrammarLazy::find_mask(const std::vector<int32_t>& key, uint64_t hash) const {
  auto [b, e] = mask_index_.equal_range(hash);
  for (auto it = b; it != e; ++it) {
    const MaskEntry& m = masks_[it->second];
    if (m.key == key) return &m;
  }
  return nullptr;
}

bool GrammarLazy::keep_mask(MaskEntry entry, uint64_t hash) {
  const int64_t bytes = kMaskEntryBytes + static_cast<int64_t>(entry.key.size() * 4 + entry.bits.size() * 8);
  // masks_ may double: its buffer counts as 2 x entries.
  const int64_t index_bytes = static_cast<int64_t>(sizeof(MaskEntry)) * 2;
  if (!make_room(bytes + index_bytes)) return false;
  mask_bytes_ += bytes + index_bytes;
  masks_.push_back(std::move(entry));
  mask_index_.emplace(hash, masks_.size() - 1);
  return true;
}

const GrammarLazy::FrameClass* GrammarLazy::find_class(const std::vector<int32_t>& key, uint64_t hash) const {
  auto [b, e] = class_index_.equal_range(hash);
  for (auto it = b; it != e; ++it) {
    const FrameClass& c = classes_[it->second];
    if (c.key == key) return &c;
  }
  return nullptr;
}

const GrammarLazy::FrameClass* GrammarLazy::keep_class(FrameClass c, uint64_t hash) {
  const int64_t bytes = kMaskEntryBytes + static_cast<int64_t>(sizeof(FrameClass)) +
                        static_cast<int64_t>(c.key.size() * 4 + c.ids.size() * 4 + c.bits.size() * 8 + c.pops.size() * 4 +
                                             c.tok_j.size() + c.pop_j.size() + c.maxd_j.size() * 8 +
                                             (c.lv_vals.size() + c.lv_at.size() + c.lv_ids.size()) * 4);
  if (!make_room(bytes)) return nullptr;
  class_bytes_ += bytes;
  classes_.push_back(std::move(c));
  class_index_.emplace(hash, classes_.size() - 1);
  return &classes_.back();
}

StackWalk::StackWalk(GrammarLazy& lazy, StackBuffers& b)
    : pool(b.pool), lazy_(lazy), g_(lazy.grammar()), work_(b.work), seen_(b.seen), seeds_(b.seeds) {
  pool.clear();
}

int32_t StackWalk::push_link(GFrame f, int32_t below) {
  GLink l;
  l.f = f;
  l.below = below;
  l.depth = below < 0 ? 1 : pool[static_cast<size_t>(below)].depth + 1;
  const int64_t under = below < 0 ? 0 : pool[static_cast<size_t>(below)].cum;
  l.cum = static_cast<int32_t>(std::min<int64_t>(lazy_.frame_dist(f) + under, Grammar::kUnreachable));
  deepest_link = std::max(deepest_link, l.depth);
  pool.push_back(l);
  return static_cast<int32_t>(pool.size() - 1);
}

void StackWalk::load(const GrammarPosition& p, std::vector<GTop>& tops) {
  tops.clear();
  size_t i = 0;
  int32_t origin = 0;
  while (i < p.data.size()) {
    const int32_t n = p.data[i++];
    int32_t below = -1;
    for (int32_t k = 0; k + 1 < n; ++k, i += 2) below = push_link({p.data[i], p.data[i + 1]}, below);
    tops.push_back({{p.data[i], p.data[i + 1]}, below, origin++});
    i += 2;
  }
}

void StackWalk::save(const GTop* tops, size_t n, bool can_end, GrammarPosition& out) const {
  out.data.clear();
  out.can_end = can_end;
  for (size_t k = 0; k < n; ++k) {
    const GTop& t = tops[k];
    const size_t at = out.data.size();
    out.data.push_back(depth(t));
    out.data.resize(at + 1 + 2 * static_cast<size_t>(depth(t)));
    size_t w = out.data.size();
    out.data[--w] = t.f.count;
    out.data[--w] = t.f.dstate;
    for (int32_t l = t.below; l >= 0; l = pool[static_cast<size_t>(l)].below) {
      out.data[--w] = pool[static_cast<size_t>(l)].f.count;
      out.data[--w] = pool[static_cast<size_t>(l)].f.dstate;
    }
  }
}

void StackWalk::start(std::vector<GTop>& tops, bool& can_end) {
  tops.clear();
  seeds_.clear();
  const int32_t d = lazy_.start(g_.root(), true);
  if (d >= 0) seeds_.push_back({{d, 0}, -1, 0});
  can_end = close(seeds_, tops, 0);
}

bool StackWalk::step(const GTop* in, size_t n, uint8_t byte, std::vector<GTop>& out) {
  seeds_.clear();
  const size_t out_begin = out.size();
  for (size_t k = 0; k < n; ++k) {
    const int32_t d = lazy_.step(in[k].f.dstate, byte);
    if (d < 0) continue;
    const GTop t{{d, in[k].f.count}, in[k].below, in[k].origin};
    const GrammarLazy::DState& s = lazy_.dstate(d);
    // Inside a rule's item with nothing to enter or leave: no closure needed.
    if (!s.item_end && !s.rule_end && s.calls_len == 0 &&
        static_cast<int64_t>(out.size() - out_begin) < g_.limits().max_stacks) {
      out.push_back(t);
    } else {
      seeds_.push_back(t);
    }
  }
  if (seeds_.empty()) return false;
  return close(seeds_, out, out_begin);
}

bool StackWalk::close(std::vector<GTop>& seeds, std::vector<GTop>& out, size_t out_begin) {
  const GrammarLimits& lim = g_.limits();
  if (out_begin > out.size()) out_begin = out.size();
  bool can_end = false;
  ended_count = INT32_MAX;
  work_.assign(seeds.begin(), seeds.end());
  seen_.clear();
  while (!work_.empty()) {
    const GTop t = work_.back();
    work_.pop_back();
    if (std::any_of(seen_.begin(), seen_.end(), [&](const GTop& o) { return o.same(t); })) continue;
    if (static_cast<int64_t>(seen_.size()) >= 8 * lim.max_stacks) {
      limited = true;
      break;
    }
    seen_.push_back(t);
    const GrammarLazy::DState s = lazy_.dstate(t.f.dstate);
    if (s.has_bytes) {
      if (static_cast<int64_t>(out.size() - out_begin) < lim.max_stacks) {
        out.push_back(t);
      } else {
        limited = true;
      }
    }
    for (uint32_t k = 0; k < s.calls_len; ++k) {
      const int32_t rule = lazy_.calls(s)[k].rule;
      const int32_t ret = lazy_.call_return(s, k);
      const int32_t callee = lazy_.start(rule, true);
      if (ret < 0 || callee < 0) continue;
      if (depth(t) + 1 > lim.max_stack_depth) {
        limited = true;
        continue;
      }
      const int32_t link = push_link({ret, t.f.count}, t.below);
      work_.push_back({{callee, 0}, link, t.origin});
    }
    if (!s.item_end && !s.rule_end) continue;
    const GrammarRule& r = g_.rules()[static_cast<size_t>(s.rule)];
    if (s.item_end) {
      const int64_t done = int64_t{t.f.count} + 1;
      // With no maximum, counts past the minimum are all alike.
      const auto count = static_cast<int32_t>(r.max < 0 ? std::min<int64_t>(done, r.min) : done);
      if (r.max < 0 || done < r.max) {
        const int32_t d = lazy_.start(s.rule, false);
        if (d >= 0) work_.push_back({{d, count}, t.below, t.origin});
      }
      if (done < r.min) continue;
      if (r.tail >= 0) {  // the frame goes on to its tail
        const int32_t d = lazy_.start_tail(s.rule);
        if (d >= 0) work_.push_back({{d, count}, t.below, t.origin});
        continue;
      }
    }
    if (t.below < 0) {
      can_end = true;
      ended_count = std::min(ended_count, t.f.count - (s.tail ? 1 : 0));
    } else {
      const GLink& l = pool[static_cast<size_t>(t.below)];
      work_.push_back({l.f, l.below, t.origin});
    }
  }
  return can_end;
}

}  // namespace plimsoll

namespace plimsoll {

bool Grammar::matches(std::string_view text) const {
  StackBuffers buffers;
  std::vector<GTop> tops, next;
  const auto lock = lazy_->lock();
  StackWalk w(*lazy_, buffers);
  bool can_end = false;
  w.start(tops, can_end);
  for (size_t i = 0; i < text.size(); ++i) {
    next.clear();
    can_end = w.step(tops.data(), tops.size(), static_cast<uint8_t>(text[i]), next);
    std::swap(tops, next);
    if (tops.empty()) return can_end && i + 1 == text.size();
  }
  return can_end;
}

}  // namespace plimsoll
