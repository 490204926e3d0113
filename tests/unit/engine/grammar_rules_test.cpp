// The rule engine: what real clients send (zod's int bounds, long strings,
// `{}`), the keywords it covers, and the cached mask against a naive oracle.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "convert/random_model.h"
#include "engine/grammar/grammar_lazy.h"
#include "engine/grammar/grammar_sources.h"
#include "engine/grammar/token_trie.h"
#include "schema_check.h"
#include "tokenizer/tokenizer.h"

namespace plimsoll {
namespace {

using nlohmann::json;

std::shared_ptr<const Grammar> schema(const json& s, const GrammarLimits& limits = GrammarLimits{}) {
  auto g = grammar_from_json_schema(s, limits);
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message);
  return g.ok() ? *g : nullptr;
}

// "text" (appended: GCC 12's -Wrestrict misfires on "\"" + s + "\"").
std::string quoted(const std::string& text) {
  std::string out = "\"";
  out += text;
  out += '"';
  return out;
}

std::string refusal(const json& s) {
  auto g = grammar_from_json_schema(s, GrammarLimits{});
  return g.ok() ? "" : g.error().message;
}

TEST(GrammarRules, ZodSafeIntegerBounds) {
  // zod 4's z.number().int().
  auto g = schema(json::parse(R"({"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991})"));
  ASSERT_TRUE(g);
  for (const char* ok : {"0", "-1", "7", "9007199254740991", "-9007199254740991", "9007199254740990", "1000000000000000"}) {
    EXPECT_TRUE(g->matches(ok)) << ok;
  }
  for (const char* no : {"9007199254740992", "-9007199254740992", "10000000000000000", "01", "-0", "1.5", "", "-"}) {
    EXPECT_FALSE(g->matches(no)) << no;
  }
  auto full = schema(json::parse(R"({"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807})"));
  ASSERT_TRUE(full);
  EXPECT_TRUE(full->matches("-9223372036854775808"));
  EXPECT_TRUE(full->matches("9223372036854775807"));
  EXPECT_FALSE(full->matches("9223372036854775808"));
  EXPECT_FALSE(full->matches("-9223372036854775809"));
}

TEST(GrammarRules, IntegerRangesAreExact) {
  const std::pair<int64_t, int64_t> ranges[] = {{-37, 1234}, {5, 5}, {0, 0}, {-100, -1}, {-999, 999}, {10, 99}, {18, 1200}};
  for (const auto& [lo, hi] : ranges) {
    auto g = schema(json{{"type", "integer"}, {"minimum", lo}, {"maximum", hi}});
    ASSERT_TRUE(g);
    for (int64_t v = -1500; v <= 1500; ++v) {
      EXPECT_EQ(g->matches(std::to_string(v)), v >= lo && v <= hi) << lo << ".." << hi << ": " << v;
    }
  }
  auto ex = schema(json::parse(R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10})"));
  ASSERT_TRUE(ex);
  EXPECT_FALSE(ex->matches("0"));
  EXPECT_TRUE(ex->matches("1"));
  EXPECT_TRUE(ex->matches("9"));
  EXPECT_FALSE(ex->matches("10"));
  auto frac = schema(json::parse(R"({"type":"integer","minimum":0.5,"maximum":3.5})"));
  ASSERT_TRUE(frac);
  EXPECT_FALSE(frac->matches("0"));
  EXPECT_TRUE(frac->matches("1"));
  EXPECT_TRUE(frac->matches("3"));
  EXPECT_FALSE(frac->matches("4"));
  EXPECT_NE(refusal(json::parse(R"({"type":"integer","minimum":5,"maximum":4})")).find("no integer"), std::string::npos);
}

TEST(GrammarRules, NumberBoundsHoldForEveryOutput) {
  auto g = schema(json::parse(R"({"type":"number","minimum":-2.5,"exclusiveMaximum":10})"));
  ASSERT_TRUE(g);
  for (const char* ok : {"-2", "0", "9", "9.99", "-1.5", "-0.5", "3.25"}) EXPECT_TRUE(g->matches(ok)) << ok;
  for (const char* no : {"10", "10.5", "-3", "-2.75", "11", "1e3", "9.0"}) EXPECT_FALSE(g->matches(no)) << no;
}

// The arithmetic truth for multipleOf m under inclusive int64 bounds.
bool multiple_within(int64_t v, int64_t lo, int64_t hi, int64_t m) { return v >= lo && v <= hi && v % m == 0; }

TEST(GrammarRules, IntegerMultiplesEqualTheArithmeticOracle) {
  struct Bounds {
    json keys;
    int64_t lo, hi;  // the inclusive integer range they mean
  };
  const Bounds bounds[] = {
      {{{"minimum", -300}, {"maximum", 300}}, -300, 300},
      {{{"exclusiveMinimum", -300}, {"exclusiveMaximum", 300}}, -299, 299},
      {{{"minimum", -250}, {"exclusiveMaximum", -3}}, -250, -4},
      {{{"exclusiveMinimum", 17}, {"maximum", 299}}, 18, 299},
      {{{"minimum", 0}, {"maximum", 0}}, 0, 0},
      {{{"minimum", -7.5}, {"maximum", 99.9}}, -7, 99},
      {json::object(), -999'999'999'999'999, 999'999'999'999'999},
  };
  for (const int64_t m : {1, 2, 3, 7, 10, 25, 60, 128, 1000}) {
    for (const Bounds& b : bounds) {
      json s = b.keys;
      s["type"] = "integer";
      s["multipleOf"] = m;
      const int64_t top = b.hi - ((b.hi % m) + m) % m;  // the greatest multiple <= hi
      if (top < b.lo) {
        EXPECT_NE(refusal(s).find("/multipleOf: no multiple of " + std::to_string(m)), std::string::npos) << s.dump();
        continue;
      }
      auto g = schema(s);
      ASSERT_TRUE(g) << s.dump();
      for (int64_t v = -400; v <= 400; ++v) {
        ASSERT_EQ(g->matches(std::to_string(v)), multiple_within(v, b.lo, b.hi, m)) << s.dump() << ": " << v;
      }
      // JSON's integer syntax, as the plain integer grammar writes it.
      for (const char* no : {"007", "-0", "00", "-00", "1e2", "0e0", "+3", "3.0", "0.0", "", "-", "0 ", "1 2"}) {
        EXPECT_FALSE(g->matches(no)) << s.dump() << ": " << no;
      }
    }
  }
  // A float that is an integer is that integer; `number` with it writes integers.
  auto n = schema(json::parse(R"({"type":"number","multipleOf":3.0,"minimum":-10,"maximum":10})"));
  ASSERT_TRUE(n);
  for (int64_t v = -20; v <= 20; ++v) EXPECT_EQ(n->matches(std::to_string(v)), multiple_within(v, -10, 10, 3)) << v;
  for (const char* no : {"6.0", "6.5", "1.5", "3e0"}) EXPECT_FALSE(n->matches(no)) << no;
  // Without `type`, multipleOf means a number.
  auto untyped = schema(json::parse(R"({"multipleOf":5})"));
  ASSERT_TRUE(untyped);
  EXPECT_TRUE(untyped->matches("-15"));
  EXPECT_FALSE(untyped->matches("16"));
}

TEST(GrammarRules, IntegerMultiplesAtInt64Magnitudes) {
  constexpr int64_t kSafe = 9007199254740991;  // zod 4: +-(2^53 - 1)
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  std::mt19937_64 rng(7);
  for (const auto& [lo, hi] : {std::pair<int64_t, int64_t>{-kSafe, kSafe}, {kMin, kMax}, {kSafe - 1000, kSafe + 3'000'000'000}}) {
    for (const int64_t m : {7, 86400, 1000000007}) {
      if (m == 1000000007 && lo != kSafe - 1000) continue;  // wide: past the state limit (below)
      auto g = schema(json{{"type", "integer"}, {"minimum", lo}, {"maximum", hi}, {"multipleOf", m}});
      ASSERT_TRUE(g) << lo << ".." << hi << " % " << m;
      EXPECT_LE(g->num_nfa_states(), GrammarLimits{}.max_multiple_of_states + 100);
      std::vector<int64_t> samples;
      for (int64_t d = 0; d <= 300; ++d) {
        for (const int64_t edge : {lo, hi, kSafe, -kSafe, int64_t{0}}) {
          if (edge >= kMin + d) samples.push_back(edge - d);
          if (edge <= kMax - d) samples.push_back(edge + d);
        }
      }
      for (int i = 0; i < 2000; ++i) {
        const auto v = static_cast<int64_t>(rng());
        samples.push_back(v);
        samples.push_back(v - v % m);  // a multiple
      }
      for (const int64_t v : samples) {
        ASSERT_EQ(g->matches(std::to_string(v)), multiple_within(v, lo, hi, m)) << lo << ".." << hi << " % " << m << ": " << v;
      }
      // One past int64's ends, and a leading zero near the top.
      EXPECT_FALSE(g->matches("9223372036854775808"));
      EXPECT_FALSE(g->matches("-9223372036854775809"));
      EXPECT_FALSE(g->matches("09007199254740986"));
    }
  }
}

TEST(GrammarRules, HostileMultipleOfIsRefusedWithinAFewSteps) {
  // A prime near 10^9 over +-(2^53 - 1) would need ~m x 16 states: refused at
  // max_multiple_of_states, well inside a small step budget (not a timed test).
  GrammarLimits limits;
  limits.max_compile_steps = 400'000;
  for (const json& s : {json::parse(R"({"type":"integer","multipleOf":999999937,"minimum":-9007199254740991,"maximum":9007199254740991})"),
                        json::parse(R"({"type":"integer","multipleOf":10007})"),
                        json::parse(R"({"properties":{"a":{"type":"number","multipleOf":999983}}})")}) {
    auto g = grammar_from_json_schema(s, limits);
    ASSERT_FALSE(g.ok()) << s.dump();
    EXPECT_NE(g.error().message.find("/multipleOf: `multipleOf`"), std::string::npos) << g.error().message;
    EXPECT_NE(g.error().message.find("more than 2048 automaton states (the limit: 2048 for every multipleOf"), std::string::npos)
        << g.error().message;
  }
  GrammarLimits none;
  none.max_multiple_of_states = 0;
  auto zero = grammar_from_json_schema(json::parse(R"({"type":"integer","multipleOf":2})"), none);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().message,
            "schema at /multipleOf: `multipleOf` 2 between -999999999999999 and 999999999999999 needs more than 0 automaton "
            "states (the limit: 0 for every multipleOf of the schema together); narrow the bounds or use a smaller multipleOf");
  // The limit is for the whole schema: three automata of ~1,000 states each are too many.
  auto three = grammar_from_json_schema(json::parse(R"({"type":"object","properties":{
      "a":{"type":"integer","multipleOf":97,"minimum":-1000000000000,"maximum":1000000000000},
      "b":{"type":"integer","multipleOf":89,"minimum":-1000000000000,"maximum":1000000000000},
      "c":{"type":"integer","multipleOf":83,"minimum":-1000000000000,"maximum":1000000000000}}})"), limits);
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.error().message.find("(the limit: 2048 for every multipleOf of the schema together)"), std::string::npos)
      << three.error().message;
  EXPECT_EQ(three.error().message.rfind("schema at /properties/", 0), 0u) << three.error().message;
  auto one = schema(json::parse(R"({"type":"object","properties":{
      "a":{"type":"integer","multipleOf":97,"minimum":-1000000000000,"maximum":1000000000000},
      "b":{"type":"integer","multipleOf":97,"minimum":-1000000000000,"maximum":1000000000000}}})"));
  EXPECT_TRUE(one) << "the same automaton twice is one rule";
  // A huge multipleOf over bounds that hold few of its multiples is cheap.
  auto few = schema(json::parse(R"({"type":"integer","multipleOf":1000000000000000000,"minimum":-9223372036854775808,"maximum":9223372036854775807})"));
  ASSERT_TRUE(few);
  for (int64_t k = -9; k <= 9; ++k) EXPECT_TRUE(few->matches(std::to_string(k * 1'000'000'000'000'000'000))) << k;
  EXPECT_FALSE(few->matches("1000000000000000001"));
  EXPECT_FALSE(few->matches("999999999999999999"));
  auto top = schema(json::parse(R"({"type":"integer","multipleOf":9223372036854775807,"minimum":-9223372036854775808,"maximum":9223372036854775807})"));
  ASSERT_TRUE(top);
  for (const char* ok : {"-9223372036854775807", "0", "9223372036854775807"}) EXPECT_TRUE(top->matches(ok)) << ok;
  for (const char* no : {"-9223372036854775808", "9223372036854775806", "1", "-1"}) EXPECT_FALSE(top->matches(no)) << no;
}

TEST(GrammarRules, CommonMultipleOfStepsTakeFewStates) {
  // NFA states beyond a grammar of one literal (docs/api.md quotes these).
  const int64_t base = schema(json::parse(R"({"const":0})"))->num_nfa_states();
  const auto extra = [&](const char* text) {
    auto g = schema(json::parse(text));
    return g ? g->num_nfa_states() - base : int64_t{-1};
  };
  EXPECT_LT(extra(R"({"type":"integer","multipleOf":7})"), 150);
  EXPECT_LT(extra(R"({"type":"integer","multipleOf":86400})"), 500);
  EXPECT_LT(extra(R"({"type":"integer","multipleOf":1000,"minimum":0,"maximum":9223372036854775807})"), 100);
  const int64_t prime = extra(R"({"type":"integer","multipleOf":97,"minimum":-1000000000,"maximum":1000000000})");
  EXPECT_GT(prime, 500);  // ~620: 97 remainders x 8 digits, the short ones pruned
  EXPECT_LT(prime, 900);
}

TEST(GrammarRules, MultipleOfRefusalsNameThePath) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type":"integer","multipleOf":0})", "schema at /multipleOf: `multipleOf` must be greater than 0"},
      {R"({"type":"integer","multipleOf":-3})", "schema at /multipleOf: `multipleOf` must be greater than 0"},
      {R"({"type":"integer","multipleOf":-2.5})", "schema at /multipleOf: `multipleOf` must be greater than 0"},
      {R"({"type":"number","multipleOf":0.01})",
       "schema at /multipleOf: `multipleOf` 0.01 is not an integer: only integer multiples are supported"},
      {R"({"type":"integer","multipleOf":"3"})", "schema at /multipleOf: `multipleOf` must be a number"},
      {R"({"type":"integer","multipleOf":1e20})", "schema at /multipleOf: `multipleOf` 1e+20 is over int64"},
      {R"({"items":{"type":"integer","multipleOf":7,"minimum":1,"maximum":6}})",
       "schema at /items/multipleOf: no multiple of 7 lies within `minimum`/`maximum`"},
      {R"({"type":"integer","multipleOf":9223372036854775807,"minimum":-9223372036854775806,"maximum":-1})",
       "schema at /multipleOf: no multiple of 9223372036854775807 lies within `minimum`/`maximum`"},
  };
  for (const auto& [s, want] : cases) EXPECT_EQ(refusal(json::parse(s)), want) << s;
}

TEST(GrammarRules, LongStringsAreCountedNotCopied) {
  auto g = schema(json::parse(R"({"type":"string","minLength":2,"maxLength":10000})"));
  ASSERT_TRUE(g);
  EXPECT_LT(g->num_nfa_states(), 500);
  EXPECT_TRUE(g->matches(quoted(std::string(10000, 'a'))));
  EXPECT_TRUE(g->matches("\"ab\""));
  EXPECT_FALSE(g->matches("\"a\""));
  EXPECT_FALSE(g->matches(quoted(std::string(10001, 'a'))));
  EXPECT_TRUE(g->matches(quoted(std::string(4999, 'x') + "\\u00e9")));  // an escape is one character
  // Once refused at 8192 DFA states: one string of 200, three of 40.
  auto one = schema(json::parse(R"({"type":"object","properties":{"a":{"type":"string","maxLength":200}},"required":["a"]})"));
  ASSERT_TRUE(one);
  auto three = schema(json::parse(R"({"type":"object","properties":{"a":{"type":"string","maxLength":40},
      "b":{"type":"string","maxLength":40},"c":{"type":"string","maxLength":40}},"required":["a","b","c"]})"));
  ASSERT_TRUE(three);
  EXPECT_TRUE(three->matches(R"({"a":"x","b":"","c":)" + quoted(std::string(40, 'z')) + "}"));
  EXPECT_FALSE(three->matches(R"({"a":"x","b":"","c":)" + quoted(std::string(41, 'z')) + "}"));
  auto items = schema(json::parse(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":5000})"));
  ASSERT_TRUE(items);
  std::string arr = "[1";
  for (int i = 0; i < 4999; ++i) arr += ",2";
  EXPECT_TRUE(items->matches(arr + "]"));
  EXPECT_FALSE(items->matches(arr + ",3]"));
  EXPECT_FALSE(items->matches("[1]"));
  EXPECT_NE(refusal(json::parse(R"({"type":"string","maxLength":100001})")).find("/maxLength"), std::string::npos);
}

TEST(GrammarRules, EmptySchemaAndTrueAreAnyJsonValueAtAnyDepth) {
  for (const json& s : {json::object(), json(true)}) {
    auto g = schema(s);
    ASSERT_TRUE(g);
    EXPECT_TRUE(g->matches("1"));
    EXPECT_TRUE(g->matches("\"x\""));
    EXPECT_TRUE(g->matches("null"));
    EXPECT_TRUE(g->matches(R"({"a": [1, {"b": null}], "c": "d"})"));
    EXPECT_TRUE(g->matches(std::string(60, '[') + std::string(60, ']')));
    EXPECT_FALSE(g->matches("[1,]"));
    EXPECT_FALSE(g->matches("{\"a\"}"));
    EXPECT_LT(g->num_rules(), 10);
  }
  // Past max_stack_depth a deeper output is refused, never a crash.
  GrammarLimits shallow;
  shallow.max_stack_depth = 8;
  auto g = schema(json::object(), shallow);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->matches("[[1]]"));
  EXPECT_FALSE(g->matches(std::string(40, '[') + std::string(40, ']')));
}

TEST(GrammarRules, KeywordsCovered) {
  auto g = schema(json::parse(R"({
    "$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
    "type": "object",
    "properties": {
      "both": {"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"n": {"type": "string"}}, "required": ["n"]}]},
      "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false},
      "opt": {"type": ["string", "null"]},
      "c": {"const": {"k": [1, 2]}},
      "map": {"type": "object", "additionalProperties": {"type": "boolean"}}
    },
    "required": ["both", "pair"]
  })"));
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->matches(R"({"both": {"id": 1, "n": "x"}, "pair": ["a", 2]})"));
  EXPECT_TRUE(g->matches(R"({"both": {"id": 1, "n": "x"}, "c": {"k":[1,2]}, "map": {"q": true}, "opt": null, "pair": ["a", 2]})"));
  EXPECT_FALSE(g->matches(R"({"both": {"id": 1}, "pair": ["a", 2]})"));       // n is required (merged)
  EXPECT_FALSE(g->matches(R"({"both": {"id": 1, "n": "x"}, "pair": ["a"]})"));  // the tuple is whole
  EXPECT_FALSE(g->matches(R"({"both": {"id": 1, "n": "x"}, "map": {"q": 1}, "pair": ["a", 2]})"));
}

TEST(GrammarRules, Formats) {
  const std::vector<std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>> cases = {
      {"date", {"2024-02-29", "1999-12-31"}, {"2024-13-01", "24-01-01", "2024-1-01"}},
      {"time", {"23:59:59Z", "01:02:03.5+05:30"}, {"24:00:00Z", "12:00:00"}},
      {"date-time", {"2024-01-02T03:04:05Z"}, {"2024-01-02 03:04:05Z"}},
      {"duration", {"P3D", "PT1H30M", "P1Y2M", "P2W"}, {"P", "PT", "3D"}},
      {"uuid", {"123e4567-e89b-12d3-a456-426614174000"}, {"123e4567e89b12d3a456426614174000"}},
      {"email", {"a.b@example.com"}, {"a@b", "@example.com"}},
      {"hostname", {"example.com", "a-b.c"}, {"-a.com", "a..b"}},
      {"ipv4", {"192.168.0.1", "0.0.0.0"}, {"256.1.1.1", "1.2.3"}},
      {"ipv6", {"::1", "2001:db8::8a2e:370:7334", "1:2:3:4:5:6:7:8"}, {"1:2:3:4:5:6:7:8:9", "1::2::3"}},
      {"uri", {"https://example.com/a?b=c#d", "urn:isbn:0451450523"}, {"example.com", "1http://x"}}};
  for (const auto& [format, good, bad] : cases) {
    auto g = schema(json{{"type", "string"}, {"format", format}});
    ASSERT_TRUE(g) << format;
    for (const std::string& v : good) EXPECT_TRUE(g->matches(quoted(v))) << format << ": " << v;
    for (const std::string& v : bad) EXPECT_FALSE(g->matches(quoted(v))) << format << ": " << v;
  }
}

TEST(GrammarRules, RefusalsNameTheKeywordAndItsPath) {
  EXPECT_EQ(refusal(json::parse(R"({"properties":{"a":{"type":"string","format":"foo"}}})")),
            "schema at /properties/a/format: format \"foo\" is not supported");
  EXPECT_EQ(refusal(json::parse(R"({"properties":{"a":{"type":"integer","multipleOf":0}}})")),
            "schema at /properties/a/multipleOf: `multipleOf` must be greater than 0");
  EXPECT_EQ(refusal(json::parse(R"({"items":{"not":{}}})")), "schema at /items/not: keyword `not` is not supported");
  EXPECT_EQ(refusal(json::parse(R"({"allOf":[{"type":"string"},{"type":"object"}]})")),
            "schema at /allOf/0: `allOf` is supported for object schemas only (merged)");
  // Annotations are ignored.
  EXPECT_EQ(refusal(json::parse(R"({"title":"t","description":"d","$schema":"x","$id":"y","examples":[1],
      "deprecated":true,"readOnly":true,"writeOnly":false,"$comment":"c","default":3,"type":"integer"})")), "");
}


// The first token whose mask disagrees with the naive oracle (its bytes
// stepped through a copy of the matcher, then completable within the rest of
// `tokens_left`), "" when none; `masked`: logits after m.mask(..., tokens_left).
std::string oracle_mismatch(const GrammarMatcher& m, const std::vector<float>& masked, const TokenTrie& trie,
                            int32_t eos, int64_t tokens_left, GrammarScratch& oracle) {
  for (int32_t id = 0; id < trie.vocab_size(); ++id) {
    bool allowed = false;
    if (id == eos) {
      allowed = m.complete();
    } else if (!trie.text(id).empty()) {
      GrammarMatcher copy = m;
      allowed = copy.advance_bytes(trie.text(id), oracle) && copy.min_bytes_left(oracle) <= tokens_left - 1;
    }
    if ((masked[static_cast<size_t>(id)] > -1e30f) != allowed) {
      return "token " + std::to_string(id) + " '" + std::string(trie.text(id)) + (allowed ? "' refused" : "' allowed");
    }
  }
  return "";
}

// The cached mask against a naive oracle: each token's bytes simulated from
// the position (advance_bytes on a copy), allowed when the output stays alive
// and can still be completed in the tokens left; end ids only when complete.
TEST(GrammarRules, MaskEqualsTheNaiveOracleOnRandomWalks) {
  auto tok = Tokenizer::create(synthetic_vocab(700));
  ASSERT_TRUE(tok.ok());
  const TokenTrie trie = TokenTrie::build(*tok);
  const json s = json::parse(R"({
    "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer", "minimum": -50, "maximum": 9007199254740991},
                       "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 3}}, "required": ["v"]}},
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 3, "maxLength": 12}, "tree": {"$ref": "#/$defs/node"},
                   "any": {}, "tags": {"type": "array", "items": {"enum": ["a", "bb"]}, "minItems": 1, "maxItems": 4}},
    "required": ["name", "tree", "tags"]
  })");
  auto g = schema(s);
  ASSERT_TRUE(g);
  GrammarScratch scratch, oracle;
  std::mt19937_64 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int32_t eos = tok->eos_id();
  const int32_t ends[1] = {eos};
  int completed = 0;
  for (int run = 0; run < 30; ++run) {
    GrammarMatcher m(g);
    const int64_t max_tokens = g->min_output_bytes() + 1 + run * 3;
    std::string out;
    for (int64_t t = 0; t < max_tokens; ++t) {
      std::vector<float> logits(static_cast<size_t>(trie.vocab_size()));
      for (float& l : logits) l = normal(rng);
      std::vector<float> masked = logits;
      ASSERT_TRUE(m.mask(masked, trie, max_tokens - t, ends, scratch)) << "run " << run << " step " << t << ": " << out;
      ASSERT_EQ(oracle_mismatch(m, masked, trie, eos, max_tokens - t, oracle), "")
          << "run " << run << " step " << t << " after " << out;
      const auto id = static_cast<int32_t>(std::max_element(masked.begin(), masked.end()) - masked.begin());
      if (id == eos) {
        ++completed;
        break;
      }
      out += trie.text(id);
      m.advance(id, trie, scratch);
    }
    const json parsed = json::parse(out, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << out;
    EXPECT_EQ(test::schema_violation(parsed, s), "") << out;
  }
  EXPECT_GT(completed, 0);
  const auto lock = g->lazy().lock();
  EXPECT_GT(g->lazy().mask_hits, 0);
}

// Counted frames near their maximum (strings within one token of maxLength,
// arrays near maxItems) take their classes from one counted walk per rule
// state (FrameClass::tok_j) instead of a walk per clamped counter: the masks
// must stay exactly the oracle's.
TEST(GrammarRules, CountedClassesNearTheMaximumEqualTheNaiveOracle) {
  auto tok = Tokenizer::create(synthetic_vocab(900));
  ASSERT_TRUE(tok.ok());
  const TokenTrie trie = TokenTrie::build(*tok);
  const json s = json::parse(R"({
    "type": "object",
    "properties": {"a": {"type": "string", "maxLength": 5}, "b": {"type": "string", "minLength": 2, "maxLength": 17},
                   "c": {"type": ["string", "null"], "maxLength": 9},
                   "d": {"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 1, "maxItems": 6},
                   "e": {"type": "string", "minLength": 4, "maxLength": 4}},
    "required": ["a", "b", "c", "d", "e"], "additionalProperties": false
  })");
  auto g = schema(s);
  ASSERT_TRUE(g);
  GrammarScratch scratch, oracle;
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int32_t eos = tok->eos_id();
  const int32_t ends[1] = {eos};
  int completed = 0;
  for (int run = 0; run < 24; ++run) {
    GrammarMatcher m(g);
    const int64_t max_tokens = g->min_output_bytes() + 4 + run * 4;
    std::string out;
    for (int64_t t = 0; t < max_tokens; ++t) {
      std::vector<float> logits(static_cast<size_t>(trie.vocab_size()));
      for (float& l : logits) l = normal(rng);
      // Favour long tokens: strings reach their maximum within a token.
      for (int32_t id = 0; id < trie.vocab_size(); ++id) logits[static_cast<size_t>(id)] += 0.6f * static_cast<float>(trie.text(id).size());
      std::vector<float> masked = logits;
      ASSERT_TRUE(m.mask(masked, trie, max_tokens - t, ends, scratch)) << "run " << run << " step " << t << ": " << out;
      ASSERT_EQ(oracle_mismatch(m, masked, trie, eos, max_tokens - t, oracle), "")
          << "run " << run << " step " << t << " after " << out;
      const auto id = static_cast<int32_t>(std::max_element(masked.begin(), masked.end()) - masked.begin());
      if (id == eos) {
        ++completed;
        break;
      }
      out += trie.text(id);
      m.advance(id, trie, scratch);
    }
    if (m.complete()) {
      const json parsed = json::parse(out, nullptr, false);
      ASSERT_FALSE(parsed.is_discarded()) << out;
      EXPECT_EQ(test::schema_violation(parsed, s), "") << out;
    }
  }
  EXPECT_GT(completed, 0);
  const auto lock = g->lazy().lock();
  EXPECT_GT(g->lazy().classes_derived, 0);
}

TEST(GrammarRules, ASmallLazyBudgetDropsMasksAndStaysValid) {
  auto tok = Tokenizer::create(synthetic_vocab(1200));
  ASSERT_TRUE(tok.ok());
  const TokenTrie trie = TokenTrie::build(*tok);
  GrammarLimits small;
  // Room for the DFA states this schema needs (~300 of ~2 KiB each), a few dozen masks beside them.
  small.max_lazy_bytes = 768 << 10;
  const json s = json::parse(R"({"type":"object","properties":{"a":{"type":"string","maxLength":30},
      "b":{"type":"array","items":{"type":"integer","minimum":0,"maximum":1000}},"c":{}},"required":["a","b","c"]})");
  auto g = schema(s, small);
  ASSERT_TRUE(g);
  GrammarScratch scratch;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int32_t ends[1] = {tok->eos_id()};
  for (int run = 0; run < 20; ++run) {
    GrammarMatcher m(g);
    std::string out;
    const int64_t max_tokens = 120;
    for (int64_t t = 0; t < max_tokens; ++t) {
      std::vector<float> logits(static_cast<size_t>(trie.vocab_size()));
      for (float& l : logits) l = normal(rng);
      ASSERT_TRUE(m.mask(logits, trie, max_tokens - t, ends, scratch)) << "run " << run << " step " << t << ": " << out;
      const auto id = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      if (id == tok->eos_id()) break;
      out += trie.text(id);
      m.advance(id, trie, scratch);
    }
    EXPECT_TRUE(g->matches(out)) << out;
    const auto lock = g->lazy().lock();
    EXPECT_LE(g->lazy().used_bytes(), small.max_lazy_bytes);
  }
  EXPECT_GE(g->bytes(), small.max_lazy_bytes);  // admission charges the whole budget
  const auto lock = g->lazy().lock();
  EXPECT_GT(g->lazy().mask_drops, 0);
  EXPECT_FALSE(g->lazy().exhausted);
}

}  // namespace
}  // namespace plimsoll
