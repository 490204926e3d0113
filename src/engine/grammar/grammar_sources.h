// Where grammars come from: a JSON schema (OpenAI json_schema, TGI grammar
// "json"), any JSON object (OpenAI json_object), a regular expression (TGI
// grammar "regex"). Each compiles to a Grammar under GrammarLimits; errors
// (kInvalidArgument) name the schema location, keyword or limit.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar.h"

namespace plimsoll {

// Output: optional leading whitespace, then one JSON value valid under `schema`
// (the subset in docs/api.md; other keywords are refused by name and JSON
// pointer path, e.g. "/properties/a/format: format \"foo\" is not supported").
Result<std::shared_ptr<const Grammar>> grammar_from_json_schema(const nlohmann::ordered_json& schema,
                                                                const GrammarLimits& limits);
// Output: optional leading whitespace, then one JSON object (nested to any
// depth up to max_stack_depth). Compiled once per process and shared.
Result<std::shared_ptr<const Grammar>> grammar_any_json_object(const GrammarLimits& limits);
// Output: the whole text matches `pattern` (anchored at both ends). Syntax:
// literals, ., [...] / [^...] (ASCII members), \d \w \s \D \W \S, escapes,
// (...), (?:...), |, * + ? {n} {n,} {n,m} (lazy forms match the same).
Result<std::shared_ptr<const Grammar>> grammar_from_regex(std::string_view pattern, const GrammarLimits& limits);

// JSON Schema's `pattern` (the same syntax): `body` writes, as a JSON string's
// contents (escaped where JSON needs it), text that matches the pattern; the
// match may start and end anywhere in the string unless the pattern begins
// with `^` / ends with `$`, which the caller pads with any characters.
struct JsonStringPattern {
  Nfa::Frag body;
  bool anchored_start = false;
  bool anchored_end = false;
};
Result<JsonStringPattern> json_string_pattern(Nfa& nfa, std::string_view pattern);

// One piece of a sequence: literal bytes, or (schema set) one JSON value under
// that schema, with no whitespace around it.
struct GrammarPiece {
  std::string literal;
  const nlohmann::ordered_json* schema = nullptr;
};
// Output: exactly one of `alternatives`, each its pieces in order (a tool
// call's syntax around its arguments). The schemas' JSON text counts against
// limits.max_source_bytes together; errors name the alternative's index.
Result<std::shared_ptr<const Grammar>> grammar_from_sequences(
    const std::vector<std::vector<GrammarPiece>>& alternatives, const GrammarLimits& limits);

}  // namespace plimsoll
