// JSON numbers as NFA fragments: integers in any int64 range as digit-range
// automata (exact), numbers whose bounds hold exactly for integer values and
// for fractions whose whole unit interval fits (no exponent when bounded),
// and the pattern texts of JSON Schema's `format`s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar.h"

namespace plimsoll {

// A bound from a schema: the value (clamped to +-2^63) and whether it is exclusive.
struct NumberBound {
  long double value = 0;
  bool exclusive = false;
};

// Integers in [lo, hi] as JSON writes them (no leading zeros, no "-0").
Nfa::Frag json_integer_range(Nfa& nfa, int64_t lo, int64_t hi);
// The multiples of m (m >= 1) in [lo, hi] as JSON integers ("-" then the
// magnitude's digits). A digit automaton: besides a few states per digit on
// the bounds' edges, one state per (digits left k, remainder t that those k
// digits must have mod m), live only when t < 10^k, shared by every length and
// both signs. Errors: kInvalidArgument when no multiple lies in [lo, hi] or
// the automaton needs more than max_states states (the message names both),
// else the meter's failure (its table is charged before it is allocated).
struct IntegerMultiples {
  Nfa::Frag frag;
  int64_t states = 0;  // of the automaton, <= max_states
};
Result<IntegerMultiples> json_integer_multiples(Nfa& nfa, int64_t lo, int64_t hi, int64_t m, int64_t max_states);
// The int64 range an integer keeps under the bounds; nullopt when empty.
// Missing bounds: +-(10^15 - 1), or int64's end past a bound beyond that.
std::optional<std::pair<int64_t, int64_t>> integer_bounds(const std::optional<NumberBound>& lo,
                                                          const std::optional<NumberBound>& hi);
// A number under the bounds (either may be missing: then the side is free);
// nullopt when no number fits.
std::optional<Nfa::Frag> json_number_bounded(Nfa& nfa, const std::optional<NumberBound>& lo,
                                             const std::optional<NumberBound>& hi);
// An unbounded JSON number (at most 15 integer, 15 fraction, 2 exponent digits).
Nfa::Frag json_number_any(Nfa& nfa, bool minus);

// The regex (regex_grammar syntax, anchored) a `format` writes; nullopt when unsupported.
std::optional<std::string> format_pattern(const std::string& format);

}  // namespace plimsoll
