// Grammar: a byte-level deterministic automaton that says which outputs are
// valid (a JSON schema, any JSON object, a regular expression). Built as a
// Thompson NFA (Nfa), then determinized once per request (compile_grammar).
// A compile is bounded as it runs, not afterwards: every byte it holds is
// counted before it is allocated (max_compile_bytes), every piece of work is
// a step (max_compile_steps), and the thread's WorkControl (deadline, cancel)
// is polled; the first limit reached stops it with an error naming that limit.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"

namespace plimsoll {

// Bounds on what one request's grammar may cost; the errors name them.
struct GrammarLimits {
  int64_t max_source_bytes = 65536;  // schema (as JSON text) or regex text
  int64_t max_nfa_states = 200000;   // while building
  int64_t max_dfa_states = 8192;     // the compiled automaton
  int64_t any_json_depth = 4;        // nesting of free-form JSON values (json_object, untyped schemas)
  // What one compile may hold at once (source tree, NFA, subsets, the automaton
  // being built); the preparation pool's per-request workspace is sized from it.
  // A forced call to one of two small tools (tool_calls_test) peaks at ~16 MB.
  int64_t max_compile_bytes = int64_t{24} << 20;
  // NFA states and edges built, closure and transition work (~10 ns each:
  // ~0.5 s of one core; a forced call to one of two small tools takes ~16M).
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

// A Thompson NFA under construction. States are ids; a fragment is a piece
// with one entry and one exit. Every state and edge is charged to the meter
// before it is added; past max_nfa_states or the meter's limits failed() is
// set and dummy ids come back (builders check failed() as they go).
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

  // Fragments.
  Frag empty();
  Frag byte_range(uint8_t lo, uint8_t hi);
  Frag literal(const std::string& bytes);
  Frag seq(Frag a, Frag b);
  Frag alt(const std::vector<Frag>& options);
  Frag optional(Frag f);
  Frag star(Frag f);  // f*
  Frag plus(Frag f);  // f+ (f once, looping back)

  // A limit was reached (meter().failure() says which).
  bool failed() const { return meter_.failed(); }
  CompileMeter& meter() const { return meter_; }
  int64_t size() const { return static_cast<int64_t>(states_.size()); }

  struct Edge {
    uint8_t lo, hi;
    int32_t to;
  };
  struct State {
    std::vector<int32_t> eps;
    std::vector<Edge> edges;
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

// The compiled automaton: transitions over byte classes (bytes that every
// edge treats alike), -1 = dead. dist_to_accept[s]: the fewest bytes from s to
// an accepting state (kUnreachable when none: such states count as dead).
class Grammar {
 public:
  static constexpr int32_t kDead = -1;
  static constexpr int32_t kUnreachable = INT32_MAX;

  int32_t start() const { return 0; }
  int32_t step(int32_t state, uint8_t byte) const {
    return next_[static_cast<size_t>(state) * num_classes_ + class_of_[byte]];
  }
  // Walks `bytes` from `state`; kDead when any byte is refused.
  int32_t walk(int32_t state, const std::string& bytes) const;
  bool accepting(int32_t state) const { return dist_[static_cast<size_t>(state)] == 0; }
  // The state can still end in an accepting one.
  bool alive(int32_t state) const { return state >= 0 && dist_[static_cast<size_t>(state)] != kUnreachable; }
  int32_t dist_to_accept(int32_t state) const { return dist_[static_cast<size_t>(state)]; }
  // The state accepts and nothing may follow (only the end of the output).
  bool finished(int32_t state) const { return accepting(state) && !has_successor_[static_cast<size_t>(state)]; }
  int32_t max_finite_dist() const { return max_dist_; }
  // Unique per compiled grammar in this process (a cache key that is never reused).
  uint64_t id() const { return id_; }
  int64_t num_states() const { return static_cast<int64_t>(dist_.size()); }
  int64_t num_classes() const { return num_classes_; }
  // Heap + object bytes, what admission charges (shared by a submission's items).
  int64_t bytes() const;

 private:
  friend Result<std::shared_ptr<const Grammar>> compile_grammar(const Nfa& nfa, Nfa::Frag root,
                                                                const GrammarLimits& limits);
  std::array<uint8_t, 256> class_of_{};
  int64_t num_classes_ = 0;
  std::vector<int32_t> next_;         // [states x classes]
  std::vector<int32_t> dist_;         // [states]
  std::vector<uint8_t> has_successor_;  // [states]
  int32_t max_dist_ = 0;
  uint64_t id_ = 0;
};

// Determinizes `root` of `nfa` (subset construction) under nfa's meter.
// Errors (kInvalidArgument) name the limit reached: NFA or DFA states,
// compile bytes or steps, the deadline (kCancelled when cancelled).
Result<std::shared_ptr<const Grammar>> compile_grammar(const Nfa& nfa, Nfa::Frag root, const GrammarLimits& limits);

// A fragment that matches any one valid UTF-8 character with the given ASCII
// bytes allowed (ascii_allowed[b] for b < 128) plus every multi-byte character.
Nfa::Frag utf8_char(Nfa& nfa, const std::array<bool, 128>& ascii_allowed);

}  // namespace plimsoll
