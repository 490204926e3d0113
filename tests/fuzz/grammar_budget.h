// The byte budget of one grammar compile (regex_fuzz, schema_fuzz), from the
// limits the compiler enforces.
#pragma once

#include <cstdint>

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

}  // namespace plimsoll::fuzz
