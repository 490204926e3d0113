// The byte budget of one grammar compile (regex_fuzz, schema_fuzz), from the
// limits the compiler enforces.
#pragma once

#include <cstdint>

#include "engine/grammar/grammar.h"

namespace plimsoll::fuzz {

// With the compile meter (GrammarLimits::max_compile_bytes, default 32 MiB):
// the meter counts what a compile holds before allocating it; the budget
// allows it plus 8 MiB for what the meter leaves out (error and path strings,
// allocator rounding, the finished grammar's shared_ptr block).
//
// Without it (the limits are states and entries only), from GrammarLimits'
// defaults (max_nfa_states 200,000, max_dfa_states 8,192) and compile_grammar's
// kMaxSubsetEntries (2 Mi NFA ids in the DFA's state sets):
//   NFA: 200,000 states x 48 B (two vectors), the array doubling to 262,144
//        with the old copy live while it moves: ~19 MiB; their edge and
//        epsilon lists (a few entries each, doubling): ~10 MiB;
//   subset construction: 2 Mi ids x 4 B = 8 MiB in the sets' map (+ nodes),
//        each closure's scratch up to the NFA's size (~2 MiB);
//   DFA: 8,192 states x 256 classes x 4 B = 8 MiB, grown by doubling with the
//        old copy live (~24 MiB at the peak), the reverse edges for distances
//        (~8 MiB + per-state vectors);
// ~80 MiB in all, rounded up to 96 MiB.
//
// Either way the targets add per input byte: a regex's syntax tree (a ~200 B
// node per pattern byte at most) -> 256 B per input byte.
template <typename Limits = GrammarLimits>
constexpr int64_t grammar_compile_budget_bytes(const Limits& limits = Limits{}) {
  if constexpr (requires { limits.max_compile_bytes; }) {
    return limits.max_compile_bytes + (int64_t{8} << 20);
  } else {
    return int64_t{96} << 20;
  }
}

}  // namespace plimsoll::fuzz
