// Fuzz target for the JSON schema grammar source (OpenAI response_format
// json_schema, TGI grammar {"type":"json"}): the input is parsed as JSON (not
// JSON, or nested deeper than the request parser's 64 levels: skipped, as the
// server refuses those bodies before this point) and compiled with the server's
// default GrammarLimits. Checks: the compile ends within the driver's deadline
// and byte budget; a compiled grammar has a finite shortest output.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "engine/grammar/grammar_sources.h"
#include "fuzz_target.h"
#include "grammar_budget.h"

namespace {

// Arrays and objects nested at most `limit` deep (api::kJsonMaxDepth, which
// parse_request_json enforces on every body); brackets inside strings skipped.
bool nesting_within(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!nesting_within(text, 64)) return 0;
  const nlohmann::json schema = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return 0;
  const plimsoll::GrammarLimits limits;
  plimsoll::fuzz::check_compiled(plimsoll::grammar_from_json_schema(schema, limits), limits, "schema_fuzz");
  return 0;
}

namespace plimsoll::fuzz {

// The byte budget: the compile's (grammar_budget.h) plus the input's JSON
// tree, which the server bounds at 32 B per body byte + 4 KiB
// (api::json_tree_limit_bytes) and the compiler's dump of it (the source size
// check): 64 B per input byte in all, on top of the compile's 256.
const TargetInfo& target_info() {
  static const TargetInfo info = [] {
    TargetInfo t;
    t.name = "schema";
    t.seeds = {
        R"({})",
        R"({"type":"string"})",
        R"({"type":"integer","minimum":0})",
        R"({"type":"number","exclusiveMinimum":0})",
        R"({"type":"boolean"})",
        R"({"type":"null"})",
        R"({"type":["string","null"]})",
        R"({"enum":["red","green","blue",1,null,true]})",
        R"({"const":{"a":[1,2]}})",
        R"({"type":"string","minLength":2,"maxLength":8})",
        R"({"type":"string","pattern":"^[A-Z]{2}-\\d{4}$"})",
        R"({"type":"string","pattern":"(a|b)+c?"})",
        R"({"type":"string","format":"date-time"})",
        R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":4})",
        R"({"type":"array","items":{"type":"string","enum":["a","b"]},"uniqueItems":true})",
        R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},)"
        R"("required":["name"],"additionalProperties":false})",
        R"({"type":"object","properties":{"id":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},)"
        R"("required":["id","tags"]})",
        R"({"type":"object","additionalProperties":{"type":"number"}})",
        R"({"anyOf":[{"type":"string"},{"type":"integer"},{"type":"object","properties":{"x":{"const":1}}}]})",
        R"({"oneOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/b"}],"$defs":{"a":{"type":"string"},"b":{"type":"null"}}})",
        R"({"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}]})",
        R"({"$defs":{"point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},)"
        R"("required":["x","y"],"additionalProperties":false}},"type":"object","properties":{"points":)"
        R"({"type":"array","items":{"$ref":"#/$defs/point"},"minItems":2}},"required":["points"]})",
        R"({"definitions":{"n":{"type":"integer"}},"type":"array","items":{"$ref":"#/definitions/n"}})",
        R"({"$defs":{"d0":{"anyOf":[{"$ref":"#/$defs/d1"},{"$ref":"#/$defs/d1"}]},)"
        R"("d1":{"anyOf":[{"$ref":"#/$defs/d2"},{"type":"null"}]},"d2":{"type":"string","maxLength":3}},)"
        R"("$ref":"#/$defs/d0"})",
        R"({"$schema":"https://json-schema.org/draft/2020-12/schema","title":"Person","description":"x",)"
        R"("type":"object","properties":{"email":{"type":"string","pattern":"^\\w+@\\w+\\.com$"},)"
        R"("nick":{"type":"string","nullable":true}},"required":["email"],"strict":true})",
        R"({"type":"object","properties":{"tool":{"enum":["search","calc"]},"args":{"type":"object"}},)"
        R"("required":["tool","args"]})",
        R"({"type":"array","items":{"type":"array","items":{"type":"array","items":{"type":"integer"}}}})",
        R"({"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object",)"
        R"("properties":{"c":{"type":"string"}}}}}}})",
        R"({"type":"string","minLength":256,"maxLength":256})",
        R"({"type":"array","minItems":0,"maxItems":256,"items":{"type":"boolean"}})",
        R"({"not":{"type":"string"}})",
        R"({"type":"string","pattern":"\\xzz"})",
    };
    t.dictionary = {R"("type")",      R"("string")",     R"("integer")",   R"("number")",     R"("object")",
                    R"("array")",     R"("boolean")",    R"("null")",      R"("properties")", R"("required")",
                    R"("$defs")",     R"("definitions")", R"("$ref")",      R"("#/$defs/a")",  R"("#/definitions/")",
                    R"("anyOf")",     R"("oneOf")",      R"("allOf")",     R"("enum")",       R"("const")",
                    R"("pattern")",   R"("minLength")",  R"("maxLength")", R"("items")",      R"("minItems")",
                    R"("maxItems")",  R"("minimum")",    R"("exclusiveMinimum")", R"("additionalProperties")",
                    R"("format")",    R"("nullable")",   R"("uniqueItems")", ":",  ",",  "{}", "[]", "true",
                    "false", "null", R"(":{"$ref":"#"})", R"({"$ref":"#/$defs/a"})", R"({"type":"string"},)",
                    R"("\u0000")", R"("\ud800")", R"("a*")", R"("(a|b)*")", R"("[^\"]{1000}")"};
    t.nests = {{R"({"anyOf":[)", "]}"},
               {R"({"type":"array","items":)", "}"},
               {R"({"type":"object","properties":{"a":)", "}}"},
               {R"({"oneOf":[{"type":"null"},)", "]}"},
               {R"({"allOf":[)", "]}"},
               {"[", "]"},
               {R"({"a":)", "}"}};
    t.budget_fixed_bytes = grammar_compile_budget_bytes();
    t.budget_per_input_byte = 256 + 64;
    t.max_input_bytes = 65536 + 64;
    return t;
  }();
  return info;
}

}  // namespace plimsoll::fuzz
