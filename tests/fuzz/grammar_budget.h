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

// What every compile result must be: a grammar within the rule and state
// limits whose shortest output is finite, or a refusal that says why. Aborts (a finding)
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
  check(g.num_rules() >= 1 && g.num_rules() <= limits.max_rules, "rules within max_rules");
  check(g.num_nfa_states() <= limits.max_nfa_states, "NFA states within max_nfa_states");
  check(g.min_output_bytes() < Grammar::kUnreachable, "some output is possible");
  // The rules' arrays (within the compile's bytes) + the fixed lazy budget.
  check(g.bytes() <= limits.max_compile_bytes + limits.max_lazy_bytes + 4096, "grammar bytes within the limits");
}

}  // namespace plimsoll::fuzz
