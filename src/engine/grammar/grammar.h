// Grammar: rules, each a small byte NFA whose edges may also call another
// rule (then go on at a return state), run with a stack: JSON schema $refs,
// recursion and big sub-schemas are rules, never expanded copies. A rule may
// repeat its item between min and max times, counted in the frame (a string's
// maxLength, an array's maxItems), not copied. Built at compile time: the
// rules only; each rule is determinized lazily at run time (grammar_lazy.h).
// A compile is bounded as it runs, not afterwards: every byte it holds is
// counted before it is allocated (max_compile_bytes), every piece of work is
// a step (max_compile_steps), and the thread's WorkControl (deadline, cancel)
// is polled; the first limit reached stops it with an error naming that limit.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace plimsoll {

class GrammarLazy;

// Bounds on what one request's grammar may cost; the errors name them.
struct GrammarLimits {
  int64_t max_source_bytes = 65536;  // schema (as JSON text) or regex text
  int64_t max_nfa_states = 200000;   // while building, all rules together
  // One rule's NFA states: a lazily built DFA state is a set of them, so this
  // bounds its size (a regex's expanded {n,m} is one rule).
  int64_t max_rule_states = 16384;
  int64_t max_rules = 4096;
  int64_t max_repeat = 100000;       // minLength/maxLength/minItems/maxItems (counted, not copied)
  // Every integer `multipleOf` automaton of one grammar together: states of
  // (digits left, remainder), each its own DFA state (~2 KiB of
  // max_lazy_bytes) once reached, so all of them take at most half of it.
  // multipleOf 7 over +-(10^15 - 1) takes ~110 states, 86400 ~420; m
  // coprime to 10 takes ~m x digits (97 over 10 digits: ~620), so a prime
  // near 10^9 is refused after 2,048 states, not built.
  int64_t max_multiple_of_states = 2048;
  // At run time: frames in one stack, stacks in one position. A token that
  // would pass either is masked off (the output stays valid).
  int64_t max_stack_depth = 128;
  int64_t max_stacks = 64;
  // Everything built lazily while a grammar is used (rule DFA states and
  // transitions, mask caches), charged in full at admission (Grammar::bytes()).
  // Masks are dropped when it is full; 8 MiB holds ~200 masks of a 152k
  // vocabulary beside ~2,000 DFA states (~2 KiB each, as charged).
  int64_t max_lazy_bytes = int64_t{8} << 20;
  // What one compile may hold at once (source tree, NFA, rules); the
  // preparation pool's per-request workspace is sized from it.
  int64_t max_compile_bytes = int64_t{24} << 20;
  // NFA states and edges built, distance passes (~10 ns each: ~0.5 s of one core).
  int64_t max_compile_steps = 50'000'000;
};

// What one compile spends: bytes held (counted before they are allocated)
// and steps, against GrammarLimits; the thread's WorkControl is polled per
// step. The first limit reached is kept (failure()) and every later charge fails.
class CompileMeter {
 public:
  explicit CompileMeter(const GrammarLimits& limits) : limits_(limits) {}
  // False (and failure() set) when `bytes` more would pass max_compile_bytes.
  bool charge(int64_t bytes);
  void release(int64_t bytes) { held_bytes_ -= bytes; }
  // One or more steps of work; false once any limit was reached.
  bool step(int64_t n = 1);
  // Sets the failure (the first one stays).
  void fail(Error error);
  bool failed() const { return failed_; }
  const Error& failure() const { return failure_; }
  int64_t held_bytes() const { return held_bytes_; }
  int64_t peak_bytes() const { return peak_bytes_; }
  int64_t steps() const { return steps_; }
  const GrammarLimits& limits() const { return limits_; }

 private:
  const GrammarLimits& limits_;
  int64_t held_bytes_ = 0;
  int64_t peak_bytes_ = 0;
  int64_t steps_ = 0;
  int64_t next_poll_ = 0;
  bool failed_ = false;
  Error failure_;
};

// A Thompson NFA under construction, all rules in one id space. States are
// ids; a fragment is a piece with one entry and one exit. Every state and edge
// is charged to the meter before it is added; past max_nfa_states or the
// meter's limits failed() is set and dummy ids come back (builders check
// failed() as they go).
class Nfa {
 public:
  struct Frag {
    int32_t start = 0;
    int32_t end = 0;
  };
  Nfa(const GrammarLimits& limits, CompileMeter& meter) : max_states_(limits.max_nfa_states), meter_(meter) {}
  ~Nfa();
  Nfa(const Nfa&) = delete;
  Nfa& operator=(const Nfa&) = delete;

  int32_t add_state();
  void add_epsilon(int32_t from, int32_t to);
  void add_range(int32_t from, uint8_t lo, uint8_t hi, int32_t to);
  // From `from`, run rule `rule` to its end, then go on at `to`.
  void add_call(int32_t from, int32_t rule, int32_t to);

  // Fragments.
  Frag empty();
  Frag byte_range(uint8_t lo, uint8_t hi);
  Frag literal(const std::string& bytes);
  Frag seq(Frag a, Frag b);
  Frag alt(const std::vector<Frag>& options);
  Frag optional(Frag f);
  Frag star(Frag f);  // f*
  Frag plus(Frag f);  // f+ (f once, looping back)
  Frag call(int32_t rule);

  // A limit was reached (meter().failure() says which).
  bool failed() const { return meter_.failed(); }
  CompileMeter& meter() const { return meter_; }
  int64_t size() const { return static_cast<int64_t>(states_.size()); }

  struct Edge {
    uint8_t lo, hi;
    int32_t to;
  };
  struct Call {
    int32_t rule;
    int32_t to;
  };
  struct State {
    std::vector<int32_t> eps;
    std::vector<Edge> edges;
    std::vector<Call> calls;
  };
  const std::vector<State>& states() const { return states_; }

 private:
  template <typename V>
  bool grow(V& v);  // charges v's next buffer before a push_back that reallocates

  int64_t max_states_;
  CompileMeter& meter_;
  int64_t charged_bytes_ = 0;  // what this NFA charged (released when it dies)
  std::vector<State> states_;
};

// A rule: items between `min` and `max` times (max < 0: no bound), the first
// entered at `first`, later ones at `next`; each item ends at `end`. A plain
// rule is one item (min = max = 1). Every item must spend at least one byte
// when min or max is not 1 (the builders' counted rules do). With a tail
// (tail >= 0), the items are followed, in the same frame, by the tail from
// `tail` to `tail_end` (a string's closing quote, an array's bracket), so the
// frame is left only there, not after every item.
struct GrammarRule {
  int32_t first = 0;
  int32_t next = 0;
  int32_t end = 0;
  int64_t min = 1;
  int64_t max = 1;
  int32_t tail = -1;
  int32_t tail_end = -1;
};

// The compiled grammar: its rules' NFA, flattened and immutable, plus the
// fewest bytes from each NFA state to its item's end (calls cost their rule's
// fewest bytes); and the lazily built part (DFA states, mask caches), shared
// by every sequence that uses it, thread-safe, within max_lazy_bytes.
class Grammar {
 public:
  static constexpr int32_t kUnreachable = INT32_MAX / 4;
  ~Grammar();

  // The fewest bytes of a whole output (admission refuses budgets below it).
  int64_t min_output_bytes() const;
  // The whole text is a complete output (tests, tools).
  bool matches(std::string_view text) const;
  // Unique per compiled grammar in this process (a cache key that is never reused).
  uint64_t id() const { return id_; }
  int64_t num_rules() const { return static_cast<int64_t>(rules_.size()); }
  int64_t num_nfa_states() const { return static_cast<int64_t>(dist_.size()); }
  // Rules and NFA + the whole lazy budget: what admission charges (shared by
  // a submission's items), fixed for the grammar's life.
  int64_t bytes() const;
  const GrammarLimits& limits() const { return limits_; }
  GrammarLazy& lazy() const { return *lazy_; }

  // The NFA, flattened (read by GrammarLazy).
  const std::vector<GrammarRule>& rules() const { return rules_; }
  int32_t root() const { return root_; }
  int32_t rule_of(int32_t s) const { return owner_[static_cast<size_t>(s)]; }
  int32_t dist(int32_t s) const { return dist_[static_cast<size_t>(s)]; }
  // Fewest bytes of one later item of `rule` (from its `next`).
  int32_t next_item_min(int32_t rule) const { return dist(rules_[static_cast<size_t>(rule)].next); }
  int32_t rule_min(int32_t rule) const { return rule_min_[static_cast<size_t>(rule)]; }
  // Fewest bytes of the rule's tail (0 without one).
  int32_t tail_min(int32_t rule) const {
    const GrammarRule& r = rules_[static_cast<size_t>(rule)];
    return r.tail < 0 ? 0 : dist(r.tail);
  }
  // The state is in its rule's tail.
  bool in_tail(int32_t s) const { return tail_[static_cast<size_t>(s)] != 0; }
  // Rules built alike (the same states, edges and calls relative to their
  // lowest state: strings with other length bounds) have one canonical rule,
  // the first of them; a state's counterpart in its rule's canonical rule.
  // Frames of alike rules with the same clamped counts take the same tokens.
  int32_t canonical_rule(int32_t rule) const { return canon_rule_[static_cast<size_t>(rule)]; }
  int32_t canonical_state(int32_t s) const { return canon_state_[static_cast<size_t>(s)]; }
  template <typename T>
  struct Span {
    const T* b;
    const T* e;
    const T* begin() const { return b; }
    const T* end() const { return e; }
  };
  Span<int32_t> eps(int32_t s) const { return {eps_.data() + eps_at_[s], eps_.data() + eps_at_[s + 1]}; }
  Span<Nfa::Edge> edges(int32_t s) const { return {edges_.data() + edges_at_[s], edges_.data() + edges_at_[s + 1]}; }
  Span<Nfa::Call> calls(int32_t s) const { return {calls_.data() + calls_at_[s], calls_.data() + calls_at_[s + 1]}; }

 private:
  friend Result<std::shared_ptr<const Grammar>> compile_grammar(const Nfa& nfa, std::vector<GrammarRule> rules,
                                                                int32_t root, const GrammarLimits& limits);
  Grammar() = default;
  bool find_canonical_rules(CompileMeter& meter);
  GrammarLimits limits_;
  std::vector<GrammarRule> rules_;
  std::vector<int32_t> rule_min_;   // [rules]
  std::vector<int32_t> owner_;      // [states] the rule a state belongs to
  std::vector<int32_t> dist_;       // [states] fewest bytes to its item's end (tail states: the tail's end)
  std::vector<uint8_t> tail_;       // [states] 1: in its rule's tail
  std::vector<int32_t> canon_rule_;   // [rules]
  std::vector<int32_t> canon_state_;  // [states]
  std::vector<uint32_t> eps_at_, edges_at_, calls_at_;  // [states + 1]
  std::vector<int32_t> eps_;
  std::vector<Nfa::Edge> edges_;
  std::vector<Nfa::Call> calls_;
  int32_t root_ = 0;
  uint64_t id_ = 0;
  std::unique_ptr<GrammarLazy> lazy_;
};

// Checks and flattens `rules` of `nfa` (root: the whole output) under nfa's
// meter: every state belongs to one rule, distances are computed (a fixpoint
// over calls, recursion included). Errors (kInvalidArgument) name the limit
// reached (kCancelled when cancelled), or say no output is possible.
Result<std::shared_ptr<const Grammar>> compile_grammar(const Nfa& nfa, std::vector<GrammarRule> rules, int32_t root,
                                                       const GrammarLimits& limits);
// One rule: the fragment `root`.
Result<std::shared_ptr<const Grammar>> compile_grammar(const Nfa& nfa, Nfa::Frag root, const GrammarLimits& limits);

// A fragment that matches any one valid UTF-8 character with the given ASCII
// bytes allowed (ascii_allowed[b] for b < 128) plus every multi-byte character.
Nfa::Frag utf8_char(Nfa& nfa, const std::array<bool, 128>& ascii_allowed);

}  // namespace plimsoll
