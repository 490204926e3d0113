// The byte budget of one grammar compile (regex_fuzz, schema_fuzz), from the
// limits the compiler enforces.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "engine/grammar/grammar.h"

namespace plimsoll::fuzz {

// The compile meter (GrammarLimits::max_compile_bytes, 24 MiB) counts what a
// compile holds before allocating it, the regex's syntax tree included; the
// budget allows it plus 8 MiB for what the meter leaves out (error and path
// strings, allocator rounding, the finished grammar's shared_ptr block).
// The targets add per input byte what the input itself costs around the
// compile (256 B per byte).
inline int64_t grammar_compile_budget_bytes(const GrammarLimits& limits = GrammarLimits{}) {
  return limits.max_compile_bytes + (int64_t{8} << 20);
}

// What every compile result must be: a grammar within the state limit whose
// start can reach acceptance, or a refusal that says why. Aborts (a finding)
// naming `target` and the check otherwise.
inline void check_compiled(const Result<std::shared_ptr<const Grammar>>& grammar, const GrammarLimits& limits,
                           const char* target) {
  auto check = [&](bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "%s: check failed: %s\n", target, what);
    std::abort();
  };
  if (!grammar.ok()) return check(!grammar.error().message.empty(), "a refusal says why");
  const Grammar& g = **grammar;
  check(g.num_states() >= 1 && g.num_states() <= limits.max_dfa_states, "DFA states within max_dfa_states");
  check(g.alive(g.start()), "the start state can reach acceptance");
  // [states x classes] int32 transitions + two per-state arrays.
  check(g.bytes() <= limits.max_dfa_states * (256 * 4 + 8) + 4096, "compiled bytes within the state limit");
}

}  // namespace plimsoll::fuzz
