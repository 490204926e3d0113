// Fuzz target for the regex grammar source (TGI grammar {"type":"regex"}): the
// input is the pattern, compiled with the server's default GrammarLimits. Checks:
// the compile ends (an error or a grammar) within the driver's deadline and byte
// budget; a compiled grammar's start state can reach acceptance and its
// reported bytes() stay under the DFA state limit's size.
#include <cstdint>
#include <string_view>

#include "engine/grammar/grammar_sources.h"
#include "fuzz_target.h"
#include "grammar_budget.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view pattern(reinterpret_cast<const char*>(data), size);
  const plimsoll::GrammarLimits limits;
  plimsoll::fuzz::check_compiled(plimsoll::grammar_from_regex(pattern, limits), limits, "regex_fuzz");
  return 0;
}

namespace plimsoll::fuzz {

// The byte budget: a compile's (grammar_budget.h) + 256 B per pattern byte
// for its syntax tree.
const TargetInfo& target_info() {
  static const TargetInfo info = [] {
    TargetInfo t;
    t.name = "regex";
    t.seeds = {
        "",
        "a",
        "abc",
        "a*",
        "a+b?c*",
        "(a|b)*c",
        "[a-z]+",
        "[^0-9]{2,5}",
        "\\d{3}-\\d{4}",
        "\\w+@\\w+\\.com",
        "^(?:yes|no)$",
        "(?:(?:a?){10}){5}",
        "[A-Z][a-z]*( [A-Z][a-z]*)*",
        "(\\+|-)?[0-9]+(\\.[0-9]+)?",
        "\\{\"name\": \"[a-z]+\"\\}",
        "((a|b)(c|d))*e{1,3}",
        "x{0}y{1,}z{2}",
        "[\\s\\S]*?end",
        ".{0,20}",
        "(a*)*",
        "[\\]\\-\\\\]",
        "\xc3\xa9t\xc3\xa9|\xe2\x82\xac",
        "(?:[0-9a-f]{2}:){5}[0-9a-f]{2}",
        "(19|20)\\d\\d-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])",
    };
    t.dictionary = {"*",    "+",    "?",     "*?",   "+?",   "??",    "{",     "}",      "{0}",  "{1,}",
                    "{2,3}", "{1000}", "{0,1000}", "{999,1000}", "{1001}", "(",   ")",     "(?:",    "|",    "[",
                    "]",    "[^",   "\\",    "\\d",  "\\w",  "\\s",   "\\D",   "\\xzz",  "\\x41", "\\u0041",
                    ".",    "^",    "$",     "-",    "a-z",  "\\]",   "\\\\",  "\xc3\xa9", "\xff", "(?=",
                    "(?<", "\\1",  "\\b"};
    t.nests = {{"(", ")"}, {"(?:", ")"}, {"(?:", ")*"}, {"(?:", "){2,3}"}, {"(", ")+"}, {"(?:a|", ")"}, {"[", "]"}};
    t.budget_fixed_bytes = grammar_compile_budget_bytes();
    t.budget_per_input_byte = 256;
    t.max_input_bytes = 65536 + 64;  // a little past max_source_bytes
    return t;
  }();
  return info;
}

}  // namespace plimsoll::fuzz
