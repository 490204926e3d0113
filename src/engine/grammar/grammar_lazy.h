// The run-time side of a Grammar, built lazily and shared by every sequence
// that uses it: each rule's DFA states (a state = a set of that rule's NFA
// states; transitions made on demand and memoized) and the mask cache. All of
// it lives within GrammarLimits::max_lazy_bytes, charged in full at admission:
// when full, the mask cache is dropped (it is recomputable); DFA states stay
// (positions name them), and past the budget a new one is refused (its byte
// is masked off: the output stays valid). One mutex; callers hold lock().
//
// A position is a set of stacks; a stack is frames (a rule's DFA state and
// its item count), bottom first. StackWalk steps sets of stacks byte by byte
// with shared tails (a pool of links, truncated as a trie walk backs up).
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/grammar/grammar.h"

namespace plimsoll {

struct GFrame {
  int32_t dstate = 0;
  int32_t count = 0;  // items of its rule done before the current one
  bool operator==(const GFrame&) const = default;
};
// A stack: its top frame and the link below it (-1: none). origin: the stack
// of the position it came from (the mask cache's clamped counters).
struct GTop {
  GFrame f;
  int32_t below = -1;
  int32_t origin = 0;
  bool same(const GTop& o) const { return f == o.f && below == o.below; }
};
struct GLink {
  GFrame f;
  int32_t below = -1;
  int32_t depth = 1;  // frames from the bottom up to this one
  int32_t cum = 0;    // fewest bytes to finish this frame and all below it
};

// One sequence's place: its stacks, each n then n x (dstate, count) bottom
// first; can_end: the output so far is complete.
struct GrammarPosition {
  std::vector<int32_t> data;
  bool can_end = false;
  bool alive() const { return can_end || !data.empty(); }
  bool operator==(const GrammarPosition&) const = default;
};

class GrammarLazy {
 public:
  struct DState {
    int32_t rule = 0;
    int32_t dist = 0;  // fewest bytes to the item's end
    bool item_end = false;  // holds its rule's item end
    bool rule_end = false;  // holds its rule's tail end
    bool tail = false;      // in its rule's tail
    bool has_bytes = false;
    uint32_t set_at = 0, set_len = 0;      // into sets_
    uint32_t calls_at = 0, calls_len = 0;  // into calls_
    int32_t row = 0;                       // into next_ (256 entries)
    int32_t chain = -1;                    // next state with the same hash
    // Its counterpart in its rule's canonical rule (Grammar::canonical_rule):
    // the id the mask cache and frame classes key on.
    int32_t canon = 0;
  };
  // The calls of one rule from a state, merged: one frame returns to the set
  // of every return state (sets_[ret_at, ret_at + ret_len)).
  struct DCall {
    int32_t rule;
    uint32_t ret_at, ret_len;
    int32_t ret = -2;  // its DFA state, made on demand (-1: dead)
  };
  struct MaskEntry {
    std::vector<int32_t> key;
    std::vector<uint64_t> bits;  // [vocab / 64] tokens allowed with no length budget
    int64_t maxd = 0;            // the most bytes any of them leaves (clamped counters)
    bool any = false;
  };

  // The tokens one top frame takes whatever lies below it (XGrammar's
  // context-independent tokens), keyed like a mask's frame: those it takes
  // without popping or popping at their last byte (a list of the accepted or
  // of the refused trie tokens, whichever is shorter), and the trie nodes
  // after which a token goes on below the popped frame.
  struct FrameClass {
    std::vector<int32_t> key;
    bool refused_list = false;
    std::vector<int32_t> ids;
    std::vector<uint64_t> bits;  // instead of ids where a bitset is smaller
    std::vector<uint32_t> pops;
    int64_t maxd = 0;  // the most bytes an accepted token leaves in the frame (clamped)
    bool usable = true;
    // A counted frame's class walked once for every count it may have
    // (items still needed 0, room j_room): per token, the items it restarts
    // (tok_j [vocab], 255: refused), per pop the same (pop_j), and per room
    // R <= j_room a bound on maxd (maxd_j). The class at room R is then the
    // tokens and pops with j <= R: no walk per clamped counter.
    std::vector<uint8_t> tok_j;
    std::vector<uint8_t> pop_j;
    std::vector<int64_t> maxd_j;
    int32_t j_room = -1;
    // Per accepted token the bytes it leaves in the frame (clamped like
    // maxd; -1 where it may pop the frame at its last byte), as levels: the
    // most common value lv_dom implicit, the others by value ascending
    // (lv_vals[k]'s tokens: lv_ids[lv_at[k], lv_at[k + 1])). A binding length
    // budget filters the class by them instead of walking the trie. Unset
    // (has_levels false) for counted classes.
    bool has_levels = false;
    int32_t lv_dom = 0;
    // The most frames a stack of the class walk held (1: the frame alone):
    // a top at depth D takes the class only where D - 1 + frames stays
    // within max_stack_depth (else the real walk would have been cut).
    int32_t frames = 1;
    std::vector<int32_t> lv_vals, lv_at, lv_ids;
  };

  explicit GrammarLazy(const Grammar& g);
  // What the lazy part holds besides max_lazy_bytes (marks, start tables).
  static int64_t fixed_bytes(const Grammar& g);
  std::unique_lock<std::mutex> lock() const { return std::unique_lock<std::mutex>(mu_); }

  // Below: the lock held.
  const DState& dstate(int32_t id) const { return states_[static_cast<size_t>(id)]; }
  // The rule's DFA state at its first / next item (-1: none).
  int32_t start(int32_t rule, bool first);
  int32_t start_tail(int32_t rule);
  // The state after `byte` (-1: dead).
  int32_t step(int32_t d, uint8_t byte) {
    const int32_t to = next_[static_cast<size_t>(d) * 256 + byte];
    return to != -2 ? to : step_slow(d, byte);
  }
  const DCall* calls(const DState& s) const { return calls_.data() + s.calls_at; }
  int32_t call_return(const DState& s, uint32_t k);
  // The fewest bytes to finish frame f (its item and its rule's later items).
  int64_t frame_dist(GFrame f) const {
    const DState& s = dstate(f.dstate);
    const GrammarRule& r = g_.rules()[static_cast<size_t>(s.rule)];
    if (s.tail) return s.dist;
    const int64_t later = r.min <= f.count + 1 ? 0 : (r.min - (f.count + 1)) * g_.next_item_min(s.rule);
    return std::min<int64_t>(s.dist + later + g_.tail_min(s.rule), Grammar::kUnreachable);
  }
  const Grammar& grammar() const { return g_; }

  const MaskEntry* find_mask(const std::vector<int32_t>& key, uint64_t hash) const;
  // Keeps `entry` (dropping every mask first when the budget is full); false
  // when it alone does not fit.
  bool keep_mask(MaskEntry entry, uint64_t hash);
  const FrameClass* find_class(const std::vector<int32_t>& key, uint64_t hash) const;
  const FrameClass* keep_class(FrameClass c, uint64_t hash);  // nullptr when it does not fit
  int64_t used_bytes() const { return dfa_bytes_ + mask_bytes_ + class_bytes_; }
  int64_t num_dstates() const { return static_cast<int64_t>(states_.size()); }
  int64_t mask_hits = 0, mask_misses = 0;
  bool exhausted = false;  // a DFA state was refused for the budget
  int64_t mask_drops = 0;  // times the masks (then the classes) were dropped to make room
  int64_t classes_made = 0;     // trie walks for frame classes
  int64_t classes_derived = 0;  // classes taken from a counted class (no walk)
  int64_t budget_masks = 0;     // masks under a length budget that may bind
  int64_t budget_walks = 0;     // of those, whole-trie walks (no class levels)

 private:
  int32_t step_slow(int32_t d, uint8_t byte);
  int32_t intern(std::vector<int32_t>& seeds, int32_t rule);
  bool charge_dfa(int64_t bytes);
  void drop_masks();  // position masks and frame classes
  bool make_room(int64_t bytes);

  const Grammar& g_;
  mutable std::mutex mu_;
  std::vector<DState> states_;
  std::vector<int32_t> sets_;
  std::vector<DCall> calls_;
  std::vector<int32_t> next_;                   // [states x 256], -2: not made yet
  std::unordered_map<uint64_t, int32_t> by_hash_;  // first state with the hash
  std::vector<int32_t> first_, next_start_, tail_start_;  // [rules], -2: not made yet
  std::vector<uint32_t> mark_;                  // [NFA states] closure marks
  uint32_t generation_ = 0;
  std::vector<int32_t> todo_, seeds_;
  std::vector<Nfa::Call> calls_tmp_;
  std::vector<MaskEntry> masks_;
  std::unordered_multimap<uint64_t, size_t> mask_index_;
  std::deque<FrameClass> classes_;  // stable addresses
  std::unordered_multimap<uint64_t, size_t> class_index_;
  int64_t dfa_bytes_ = 0;
  int64_t mask_bytes_ = 0;
  int64_t class_bytes_ = 0;
};

// StackWalk's buffers, reused (a thread's GrammarScratch holds one set).
struct StackBuffers {
  std::vector<GLink> pool;
  std::vector<GTop> work, seen, seeds;
};

// Steps sets of stacks (the lock held). Sets are GTop lists; links live in
// pool, which a caller may truncate back to a size it saw earlier.
class StackWalk {
 public:
  StackWalk(GrammarLazy& lazy, StackBuffers& buffers);
  std::vector<GLink>& pool;
  // The position's stacks as tops (origins 0, 1, ...).
  void load(const GrammarPosition& p, std::vector<GTop>& tops);
  void save(const GTop* tops, size_t n, bool can_end, GrammarPosition& out) const;
  // The start position of the grammar.
  void start(std::vector<GTop>& tops, bool& can_end);
  // Appends to `out` the tops after `byte` from tops [in, in + n), closed;
  // returns whether the output may end there.
  bool step(const GTop* in, size_t n, uint8_t byte, std::vector<GTop>& out);
  // Expands `seeds` (consumed) into `out`: calls entered, finished items
  // restarted or popped; only tops that can take a byte stay, at most
  // max_stacks from out[out_begin] on.
  bool close(std::vector<GTop>& seeds, std::vector<GTop>& out, size_t out_begin);
  int64_t dist(const GTop& t) const {
    const int64_t under = t.below < 0 ? 0 : pool[static_cast<size_t>(t.below)].cum;
    return lazy_.frame_dist(t.f) + under;
  }
  // One top, one byte, inside its item (nothing entered or left): 1 and
  // `out` set; 0: dead; 2: needs step().
  int step_one(const GTop& t, uint8_t byte, GTop& out) {
    const int32_t d = lazy_.step(t.f.dstate, byte);
    if (d < 0) return 0;
    const GrammarLazy::DState& s = lazy_.dstate(d);
    if (s.item_end || s.rule_end || s.calls_len != 0) return 2;
    out = GTop{{d, t.f.count}, t.below, t.origin};
    return 1;
  }
  int32_t depth(const GTop& t) const { return t.below < 0 ? 1 : pool[static_cast<size_t>(t.below)].depth + 1; }
  GrammarLazy& lazy() { return lazy_; }
  bool limited = false;  // a stack was dropped for max_stack_depth / max_stacks
  int32_t deepest_link = 0;  // the deepest link pushed (GLink::depth) since the caller reset it
  // Of the bottom frames that ended in the last close(), the least count
  // (less one from the rule's tail: the items restarted, each needing room);
  // INT32_MAX: none.
  int32_t ended_count = INT32_MAX;

 private:
  int32_t push_link(GFrame f, int32_t below);
  GrammarLazy& lazy_;
  const Grammar& g_;
  std::vector<GTop>& work_;
  std::vector<GTop>& seen_;
  std::vector<GTop>& seeds_;
};

}  // namespace plimsoll
