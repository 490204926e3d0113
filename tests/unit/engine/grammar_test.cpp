#include <gtest/gtest.h>

#include <cmath>
#include <regex.h>

#include <map>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "convert/random_model.h"
#include "engine/grammar/grammar_sources.h"
#include "engine/grammar/token_trie.h"
#include "tokenizer/tokenizer.h"
#include "schema_check.h"
#include "test_paths.h"
#include "tokenizer/tokenizer_loading.h"

namespace plimsoll {
namespace {

using nlohmann::json;

bool matches(const Grammar& g, const std::string& text) { return g.matches(text); }

std::shared_ptr<const Grammar> regex(const std::string& p) {
  auto g = grammar_from_regex(p, GrammarLimits{});
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message);
  return g.ok() ? *g : nullptr;
}

std::shared_ptr<const Grammar> schema(const json& s) {
  auto g = grammar_from_json_schema(s, GrammarLimits{});
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message);
  return g.ok() ? *g : nullptr;
}

TEST(GrammarRegex, MatchesWholeText) {
  auto g = regex(R"(\d{3}-[a-c]+(x|yz)?)");
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(*g, "123-abca"));
  EXPECT_TRUE(matches(*g, "123-ayz"));
  EXPECT_FALSE(matches(*g, "12-a"));
  EXPECT_FALSE(matches(*g, "123-ad"));
  EXPECT_FALSE(matches(*g, "123-a "));
  auto email = regex(R"(^[a-z]+@[a-z]+\.(com|org)$)");
  ASSERT_TRUE(email);
  EXPECT_TRUE(matches(*email, "bob@example.org"));
  EXPECT_FALSE(matches(*email, "bob@example.net"));
  auto dot = regex("a.c");
  ASSERT_TRUE(dot);
  EXPECT_TRUE(matches(*dot, "a\xc3\xa9" "c"));   // é is one character
  EXPECT_FALSE(matches(*dot, "a\xc3" "c"));      // half a character is not
  EXPECT_FALSE(matches(*dot, "a\nc"));
  auto neg = regex("[^0-9]{2}");
  ASSERT_TRUE(neg);
  EXPECT_TRUE(matches(*neg, "x\xe2\x82\xac"));
  EXPECT_FALSE(matches(*neg, "x1"));
}

TEST(GrammarRegex, RefusesWhatItDoesNotSupportByName) {
  for (const char* p : {"a\\bc", "(?i)abc", "[é]", "a{3,1}", "(ab", "*a", "a^b"}) {
    auto g = grammar_from_regex(p, GrammarLimits{});
    ASSERT_FALSE(g.ok()) << p;
    EXPECT_NE(g.error().message.find("regex at offset"), std::string::npos) << g.error().message;
  }
  GrammarLimits small;
  small.max_rule_states = 50;
  auto big = grammar_from_regex("[a-z]{200}", small);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("more than 50 automaton states"), std::string::npos) << big.error().message;
  auto many = grammar_from_regex("(a{1000}){1000}", GrammarLimits{});
  ASSERT_FALSE(many.ok());
  // A million copies of `a`: stopped by the first limit it reaches (the compile's bytes).
  EXPECT_NE(many.error().message.find("(the limit)"), std::string::npos) << many.error().message;
}

TEST(GrammarSchema, AcceptsValidRefusesInvalid) {
  const json s = json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 8},
      "age": {"type": "integer", "minimum": 0},
      "tags": {"type": "array", "items": {"enum": ["a", "b", 3]}, "maxItems": 2},
      "kind": {"anyOf": [{"type": "null"}, {"type": "boolean"}]},
      "score": {"type": "number"}
    },
    "required": ["name", "age"],
    "additionalProperties": false
  })");
  auto g = schema(s);
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(*g, R"({"age": 3, "name": "bob"})"));
  EXPECT_TRUE(matches(*g, " {\n  \"age\":0,\"kind\":null,\"name\":\"\\u00e9\\n\",\"score\":-1.5e3,\"tags\":[\"a\",3]}"));
  EXPECT_FALSE(matches(*g, R"({"name": "bob"})"));                       // age is required
  EXPECT_FALSE(matches(*g, R"({"age": -1, "name": "bob"})"));            // minimum 0
  EXPECT_FALSE(matches(*g, R"({"age": 1, "name": "bob", "x": 1})"));     // no other properties
  EXPECT_FALSE(matches(*g, R"({"age": 1, "name": "123456789"})"));       // maxLength 8
  EXPECT_FALSE(matches(*g, R"({"age": 1, "name": "b", "tags": ["a","a","a"]})"));
  EXPECT_FALSE(matches(*g, R"({"age": 01, "name": "b"})"));
  EXPECT_FALSE(matches(*g, "{\"age\": 1, \"name\": \"\\ud800\"}"));      // lone surrogate
  EXPECT_FALSE(matches(*g, R"({"age": 1, "name": "b"} )"));              // nothing after the value
}

TEST(GrammarSchema, RefsAndDefs) {
  const json s = json::parse(R"({
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
    "type": "array", "items": {"$ref": "#/$defs/point"}, "minItems": 1
  })");
  auto g = schema(s);
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(*g, R"([{"x": 1}, {"x": -2}])"));
  EXPECT_FALSE(matches(*g, "[]"));
  // Recursion is a rule calling itself: any depth up to max_stack_depth.
  auto rec = schema(json::parse(R"({"$defs":{"n":{"type":"object","properties":{"c":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"})"));
  ASSERT_TRUE(rec);
  EXPECT_TRUE(matches(*rec, R"({"c": {"c": {"c": {}}}})"));
  EXPECT_FALSE(matches(*rec, R"({"c": {"c": {"d": {}}}})"));
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += R"({"c":)";
  deep += "{}" + std::string(100, '}');
  EXPECT_TRUE(matches(*rec, deep));
}

TEST(GrammarSchema, RefusesUnsupportedKeywordsNamingThem) {
  auto g = grammar_from_json_schema(json::parse(R"({"type":"object","properties":{"a":{"type":"integer","if":5}}})"),
                                    GrammarLimits{});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "schema at /properties/a/if: keyword `if` is not supported");
  auto f = grammar_from_json_schema(json::parse(R"({"type":"object","properties":{"a":{"type":"string","format":"foo"}}})"),
                                    GrammarLimits{});
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().message, "schema at /properties/a/format: format \"foo\" is not supported");
  auto m = grammar_from_json_schema(json::parse(R"({"type":"number","multipleOf":0.5})"), GrammarLimits{});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, "schema at /multipleOf: `multipleOf` 0.5 is not an integer: only integer multiples are supported");
  GrammarLimits tiny;
  tiny.max_source_bytes = 10;
  auto big = grammar_from_json_schema(json::parse(R"({"type":"string"})"), tiny);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("over the limit of 10"), std::string::npos);
}

TEST(GrammarSchema, PatternMatchesTheDecodedStringAnywhereUnlessAnchored) {
  auto zip = schema(json::parse(R"({"type":"string","pattern":"^[0-9]{5}$"})"));
  ASSERT_TRUE(zip);
  EXPECT_TRUE(matches(*zip, R"("12345")"));
  EXPECT_FALSE(matches(*zip, R"("1234")"));
  EXPECT_FALSE(matches(*zip, R"("123456")"));
  auto inside = schema(json::parse(R"({"type":"string","pattern":"ab+c"})"));
  ASSERT_TRUE(inside);
  EXPECT_TRUE(matches(*inside, R"("abc")"));
  EXPECT_TRUE(matches(*inside, R"("x \"abbbc\" y")"));  // anywhere, any JSON string around it
  EXPECT_FALSE(matches(*inside, R"("ac")"));
  auto head = schema(json::parse(R"({"type":"string","pattern":"^id-"})"));
  ASSERT_TRUE(head);
  EXPECT_TRUE(matches(*head, R"("id-7")"));
  EXPECT_FALSE(matches(*head, R"("x id-7")"));
  // Characters JSON escapes are written escaped: the decoded text is what matches.
  auto quote = schema(json::parse(R"({"type":"string","pattern":"^a\"b\\\\c$"})"));  // the text a"b\c
  ASSERT_TRUE(quote);
  EXPECT_TRUE(matches(*quote, R"("a\"b\\c")"));
  EXPECT_FALSE(matches(*quote, R"("a"b\c")"));
  auto one = schema(json::parse(R"({"type":"string","pattern":"^.$"})"));
  ASSERT_TRUE(one);
  EXPECT_TRUE(matches(*one, R"("\"")"));
  EXPECT_TRUE(matches(*one, R"("\t")"));
  EXPECT_TRUE(matches(*one, "\"\xc3\xa9\""));
  EXPECT_FALSE(matches(*one, "\"\t\""));       // a raw tab is not JSON
  EXPECT_FALSE(matches(*one, R"("\n")"));        // `.` is not a newline
  auto both = grammar_from_json_schema(json::parse(R"({"type":"string","pattern":"a+","maxLength":3})"), GrammarLimits{});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().message.find("`pattern` together with `minLength` or `maxLength`"), std::string::npos);
  auto bad = grammar_from_json_schema(json::parse(R"({"properties":{"a":{"type":"string","pattern":"(?i)x"}}})"),
                                      GrammarLimits{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("schema at /properties/a/pattern: regex at offset"), std::string::npos)
      << bad.error().message;
}

TEST(GrammarSchema, AnyJsonObject) {
  auto g = grammar_any_json_object(GrammarLimits{});
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_TRUE(matches(**g, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_TRUE(matches(**g, "{}"));
  EXPECT_FALSE(matches(**g, "[1]"));
  EXPECT_FALSE(matches(**g, R"({"a": 1,})"));
}

TEST(TokenTrie, HoldsEveryOrdinaryTokenOnce) {
  auto tok = Tokenizer::create(synthetic_vocab(2000));
  ASSERT_TRUE(tok.ok());
  const TokenTrie trie = TokenTrie::build(*tok);
  EXPECT_TRUE(trie.has_all_bytes());
  EXPECT_EQ(trie.text(1), "");  // <s>
  EXPECT_EQ(trie.text(3 + '{'), "{");
  auto g = regex("[a-z ]*");
  ASSERT_TRUE(g);
  GrammarMatcher m(g);
  GrammarScratch scratch;
  std::vector<float> logits(static_cast<size_t>(trie.vocab_size()), 0.0f);
  ASSERT_TRUE(m.mask_uncached(logits, trie, 1000, {}, scratch));
  std::vector<int32_t> allowed;
  for (size_t id = 0; id < logits.size(); ++id) {
    if (logits[id] == 0.0f) allowed.push_back(static_cast<int32_t>(id));
  }
  for (int32_t id : allowed) {
    for (char c : trie.text(id)) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == ' ') << id;
  }
  // Every token made only of [a-z ] is there, each once.
  std::set<int32_t> seen(allowed.begin(), allowed.end());
  EXPECT_EQ(seen.size(), allowed.size());
  int64_t expected = 0;
  for (int32_t id = 0; id < 2000; ++id) {
    const std::string_view t = trie.text(id);
    if (!t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == ' '; })) ++expected;
  }
  EXPECT_EQ(static_cast<int64_t>(allowed.size()), expected);
}

// A random "model" (random logits each step) under the grammar: the output is
// always complete and valid, however short the token budget.
std::string run_random(const Grammar& g, const TokenTrie& trie, int32_t eos, uint64_t seed, int64_t max_tokens,
                       bool* ended) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  GrammarMatcher m(std::shared_ptr<const Grammar>(&g, [](const Grammar*) {}));
  GrammarScratch scratch;
  std::vector<float> logits(static_cast<size_t>(trie.vocab_size()));
  std::string out;
  const int32_t ends[1] = {eos};
  *ended = false;
  for (int64_t t = 0; t < max_tokens; ++t) {
    for (float& l : logits) l = normal(rng);
    EXPECT_TRUE(m.mask(logits, trie, max_tokens - t, ends, scratch));
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i) best = logits[i] > logits[best] ? i : best;
    const auto id = static_cast<int32_t>(best);
    if (id == eos) {
      *ended = true;
      break;
    }
    out += trie.text(id);
    m.advance(id, trie, scratch);
  }
  return out;
}


// `seeds` random outputs (budgets of 60 to 220 tokens): each must be JSON that
// `s` accepts. Returns how many ended by EOS before their budget.
int random_outputs_valid(const Grammar& g, const json& s, const TokenTrie& trie, int32_t eos, uint64_t seeds) {
  int ended_count = 0;
  for (uint64_t seed = 0; seed < seeds; ++seed) {
    const int64_t max_tokens = 60 + static_cast<int64_t>(seed % 5) * 40;
    bool ended = false;
    const std::string out = run_random(g, trie, eos, seed, max_tokens, &ended);
    ended_count += ended;
    const json parsed = json::parse(out, nullptr, false);
    if (parsed.is_discarded()) {
      ADD_FAILURE() << "seed " << seed << ": not JSON: " << out;
      continue;
    }
    EXPECT_EQ(test::schema_violation(parsed, s), "") << "seed " << seed << ": " << out;
  }
  return ended_count;
}

TEST(GrammarRandomModel, SchemaOutputIsAlwaysValid) {
  auto tok = Tokenizer::create(synthetic_vocab(1200));
  ASSERT_TRUE(tok.ok());
  const TokenTrie trie = TokenTrie::build(*tok);
  const json s = json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string"},
      "n": {"type": "integer"},
      "ok": {"type": "boolean"},
      "xs": {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3},
      "opt": {"enum": ["red", "green", null]},
      "sub": {"type": "object", "properties": {"k": {"type": ["string", "null"]}}, "required": ["k"],
              "additionalProperties": false}
    },
    "required": ["name", "n", "xs", "sub"],
    "additionalProperties": false
  })");
  auto g = schema(s);
  ASSERT_TRUE(g);
  EXPECT_GT(random_outputs_valid(*g, s, trie, tok->eos_id(), 200), 0);
}

TEST(GrammarRandomModel, MultipleOfOutputIsAlwaysAMultiple) {
  auto tok = Tokenizer::create(synthetic_vocab(1200));
  ASSERT_TRUE(tok.ok());
  const TokenTrie trie = TokenTrie::build(*tok);
  // 97 over 10 digits: a ~800-state automaton, each state a DFA state when reached.
  const json s = json::parse(R"({
    "type": "object",
    "properties": {
      "a": {"type": "integer", "multipleOf": 7},
      "b": {"type": "integer", "multipleOf": 97, "minimum": -1000000000, "maximum": 1000000000},
      "c": {"type": "number", "multipleOf": 25, "exclusiveMinimum": 0, "maximum": 1000000},
      "xs": {"type": "array", "items": {"type": "integer", "multipleOf": 3, "exclusiveMinimum": -100}, "maxItems": 4}
    },
    "required": ["a", "b", "c", "xs"],
    "additionalProperties": false
  })");
  auto g = schema(s);
  ASSERT_TRUE(g);
  EXPECT_GT(random_outputs_valid(*g, s, trie, tok->eos_id(), 100), 0);
  const auto lock = g->lazy().lock();
  EXPECT_LE(g->lazy().used_bytes(), g->limits().max_lazy_bytes);
  EXPECT_LT(g->lazy().num_dstates(), 3000);
}

TEST(GrammarRandomModel, JsonObjectAndRegexOutputIsAlwaysValid) {
  auto tok = Tokenizer::create(synthetic_vocab(1200));
  ASSERT_TRUE(tok.ok());
  const TokenTrie trie = TokenTrie::build(*tok);
  auto any = grammar_any_json_object(GrammarLimits{});
  ASSERT_TRUE(any.ok());
  auto re = regex(R"((yes|no) [0-9]{2,4}( [a-z]+)*)");
  ASSERT_TRUE(re);
  for (uint64_t seed = 0; seed < 100; ++seed) {
    bool ended = false;
    const std::string out = run_random(**any, trie, tok->eos_id(), seed, 30 + static_cast<int64_t>(seed), &ended);
    const json parsed = json::parse(out, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << "seed " << seed << ": " << out;
    EXPECT_TRUE(parsed.is_object());
    const std::string r = run_random(*re, trie, tok->eos_id(), seed, 12 + static_cast<int64_t>(seed % 20), &ended);
    EXPECT_TRUE(matches(*re, r)) << r;
  }
}

// POSIX extended regex search (libc's regcomp/regexec): the oracle for the
// patterns below, which mean the same in ERE and ECMAScript. (GCC 12's
// std::regex trips -Wmaybe-uninitialized under ASan.)
bool posix_search(const std::string& pattern, const std::string& text) {
  regex_t re;
  if (regcomp(&re, pattern.c_str(), REG_EXTENDED | REG_NOSUB) != 0) {
    ADD_FAILURE() << "regcomp refused " << pattern;
    return false;
  }
  const bool found = regexec(&re, text.c_str(), 0, nullptr, 0) == 0;
  regfree(&re);
  return found;
}

TEST(GrammarRandomModel, PatternOutputMatchesUnderPosixRegex) {
  auto tok = Tokenizer::create(synthetic_vocab(1200));
  ASSERT_TRUE(tok.ok());
  const TokenTrie trie = TokenTrie::build(*tok);
  const std::map<std::string, std::string> patterns = {
      {"zip", "^[0-9]{5}$"}, {"word", "the (cat|dog)"}, {"code", "^[A-Z]{2}-[0-9]+"}, {"odd", "^[\"\\\\]{1,3}$"}};
  json props = json::object();
  for (const auto& [name, p] : patterns) props[name] = {{"type", "string"}, {"pattern", p}};
  const json s = {{"type", "object"}, {"properties", props}, {"required", {"zip", "word", "code", "odd"}},
                  {"additionalProperties", false}};
  auto g = schema(s);
  ASSERT_TRUE(g);
  for (uint64_t seed = 0; seed < 60; ++seed) {
    bool ended = false;
    const std::string out = run_random(*g, trie, tok->eos_id(), seed, 80 + static_cast<int64_t>(seed % 4) * 40, &ended);
    const json parsed = json::parse(out, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << "seed " << seed << ": " << out;
    for (const auto& [name, p] : patterns) {
      const std::string v = parsed.at(name).get<std::string>();
      EXPECT_TRUE(posix_search(p, v)) << name << " = " << v << " (" << p << ")";
    }
  }
}

TEST(GrammarMaskCache, EqualsTheTrieWalkAtEveryStep) {
  auto tok = Tokenizer::create(synthetic_vocab(1500));
  ASSERT_TRUE(tok.ok());
  const TokenTrie trie = TokenTrie::build(*tok);
  auto g = schema(json::parse(R"({"type":"object","properties":{"s":{"type":"string"},"n":{"type":"number"},
                                   "xs":{"type":"array","items":{"type":"integer"}}},"required":["s","n","xs"]})"));
  ASSERT_TRUE(g);
  GrammarScratch cached, plain;
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int32_t ends[1] = {tok->eos_id()};
  for (int run = 0; run < 20; ++run) {
    GrammarMatcher m(g);
    const int64_t max_tokens = 150;
    for (int64_t t = 0; t < max_tokens; ++t) {
      std::vector<float> a(static_cast<size_t>(trie.vocab_size()));
      for (float& l : a) l = normal(rng);
      std::vector<float> b = a;
      ASSERT_TRUE(m.mask(a, trie, max_tokens - t, ends, cached));
      ASSERT_TRUE(m.mask_uncached(b, trie, max_tokens - t, ends, plain));
      ASSERT_EQ(a, b) << "run " << run << " step " << t;
      const auto id = static_cast<int32_t>(std::max_element(a.begin(), a.end()) - a.begin());
      if (id == tok->eos_id()) break;
      m.advance(id, trie, plain);
    }
  }
  const auto lock = g->lazy().lock();
  EXPECT_GT(g->lazy().mask_hits, g->lazy().mask_misses);  // positions repeat inside strings and numbers
}

// Budgets that bind for most of each output (its shortest output + a few
// tokens): the masks built from the frame classes' levels equal the walk's.
// Returns {masks under a binding budget, of them whole-trie walks}.
// Run r's budget: the shortest output + 4 + slack_per_run x (r % 8) tokens.
std::pair<int64_t, int64_t> check_binding_budgets(const TextTokenizer& tok, const std::vector<json>& schemas,
                                                  int runs, int64_t slack_per_run) {
  const TokenTrie trie = TokenTrie::build(tok);
  int64_t budgeted = 0, walked = 0;
  for (size_t si = 0; si < schemas.size(); ++si) {
    const json& js = schemas[si].contains("schema") ? schemas[si]["schema"] : schemas[si];
    auto g = schema(js);
    EXPECT_TRUE(g);
    if (!g) continue;
    GrammarScratch cached, plain;
    std::mt19937_64 rng(11 + si);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    const int32_t ends[1] = {tok.eos_id()};
    for (int run = 0; run < runs; ++run) {
      GrammarMatcher m(g);
      const int64_t max_tokens = g->min_output_bytes() + 4 + slack_per_run * (run % 8);
      for (int64_t t = 0; t < max_tokens; ++t) {
        std::vector<float> a(static_cast<size_t>(trie.vocab_size()));
        for (float& l : a) l = normal(rng);
        std::vector<float> b = a;
        EXPECT_TRUE(m.mask(a, trie, max_tokens - t, ends, cached));
        EXPECT_TRUE(m.mask_uncached(b, trie, max_tokens - t, ends, plain));
        if (a != b) {
          ADD_FAILURE() << "schema " << si << " run " << run << " step " << t;
          return {budgeted, walked};
        }
        const auto id = static_cast<int32_t>(std::max_element(a.begin(), a.end()) - a.begin());
        if (id == tok.eos_id()) break;
        m.advance(id, trie, plain);
      }
      EXPECT_TRUE(m.complete()) << "schema " << si << " run " << run;
    }
    const auto lock = g->lazy().lock();
    budgeted += g->lazy().budget_masks;
    walked += g->lazy().budget_walks;
  }
  return {budgeted, walked};
}

// Strings near their maxLength: classes derived from a counted class.
const json kShortStrings = json::parse(R"({"type":"array","items":{"type":"string","maxLength":6},"minItems":3,"maxItems":5})");
const json kBoundedObject = json::parse(R"({"type":"object","properties":{"a":{"type":"string","minLength":2,"maxLength":9},
  "b":{"type":"array","items":{"type":"integer"},"maxItems":3}},"required":["a","b"]})");

TEST(GrammarMaskCache, BindingBudgetEqualsTheTrieWalk) {
  auto tok = Tokenizer::create(synthetic_vocab(3000));
  ASSERT_TRUE(tok.ok());
  const auto [budgeted, walked] = check_binding_budgets(*tok, {
      json::parse(R"({"type":"object","properties":{"name":{"type":"string","minLength":5,"maxLength":30},
        "tags":{"type":"array","items":{"type":"string","maxLength":8},"minItems":1,"maxItems":4},
        "k":{"enum":["alpha","beta"]},"n":{"type":"integer","minimum":-50,"maximum":5000},
        "o":{"type":["string","null"]}},"required":["name","tags","k","n"]})"),
      json::parse(testing::read_file(testing::source_dir() + "/tests/data/schemas/openai_order.json")),
      json::parse(R"({"type":"array","items":{"type":"object","properties":{"x":{"type":"number"},
        "y":{"type":"array","items":{"type":"boolean"}}},"required":["x","y"]},"minItems":2})"),
      kShortStrings, kBoundedObject}, 8, 6);
  EXPECT_GT(budgeted, 100);          // the budget bound
  EXPECT_LT(walked * 4, budgeted);   // mostly without a whole-trie walk
}

// A real vocabulary: tokens that close a string after several characters
// (`abc"`), so a string near its maxLength takes only some of them.
TEST(GrammarMaskCache, BindingBudgetEqualsTheTrieWalkOnLlamaVocabulary) {
  auto tok = load_tokenizer_alone(testing::shared_dir() + "/vocab-tests/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  const auto [budgeted, walked] = check_binding_budgets(*tok->tokenizer, {kShortStrings, kBoundedObject}, 40, 0);
  EXPECT_GT(budgeted, 20);
  EXPECT_EQ(walked, 0) << budgeted;
}

// One token longer than max_stack_depth (real vocabularies have 128-byte runs
// of spaces or dashes) must not turn every mask into a whole-trie walk: a
// class is usable wherever the frames its own walk pushed fit on the stack.
TEST(GrammarMaskCache, ALongTokenKeepsTheClassesInUse) {
  Vocab v = synthetic_vocab(2000);
  v.pieces.push_back(std::string(130, '-'));
  v.scores.push_back(0.0f);
  v.types.push_back(v.types.back());
  auto tok = Tokenizer::create(v);
  ASSERT_TRUE(tok.ok());
  const TokenTrie trie = TokenTrie::build(*tok);
  ASSERT_GE(trie.max_depth(), 130);
  auto g = schema(json::parse(R"({"type":"object","properties":{"s":{"type":"string","maxLength":300},
                                   "xs":{"type":"array","items":{"type":"integer"}}},"required":["s","xs"]})"));
  ASSERT_TRUE(g);
  GrammarScratch cached, plain;
  std::mt19937_64 rng(9);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int32_t ends[1] = {tok->eos_id()};
  GrammarMatcher m(g);
  for (int64_t t = 0; t < 60; ++t) {
    std::vector<float> a(static_cast<size_t>(trie.vocab_size()));
    for (float& l : a) l = normal(rng);
    std::vector<float> b = a;
    ASSERT_TRUE(m.mask(a, trie, 400 - t, ends, cached));
    ASSERT_TRUE(m.mask_uncached(b, trie, 400 - t, ends, plain));
    ASSERT_EQ(a, b) << "step " << t;
    const auto id = static_cast<int32_t>(std::max_element(a.begin(), a.end()) - a.begin());
    if (id == tok->eos_id()) break;
    m.advance(id, trie, plain);
  }
  const auto lock = g->lazy().lock();
  EXPECT_GT(g->lazy().classes_made, 0);
}

TEST(GrammarRandomModel, TooShortABudgetStillEndsComplete) {
  // Ten tokens for "{"a":...}": the mask steers to the shortest completion.
  auto tok = Tokenizer::create(synthetic_vocab(600));
  ASSERT_TRUE(tok.ok());
  const TokenTrie trie = TokenTrie::build(*tok);
  auto g = schema(json::parse(R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a"]})"));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->min_output_bytes(), 8);  // {"a":""}
  for (uint64_t seed = 0; seed < 50; ++seed) {
    bool ended = false;
    const std::string out = run_random(*g, trie, tok->eos_id(), seed, 8, &ended);
    EXPECT_TRUE(matches(*g, out)) << out;
  }
}

// apply(from, to): the same logits as a copy with apply() in place, for bitsets of
// every density, a vocabulary that ends inside a word, and end ids that a
// complete output keeps.
TEST(GrammarMask, MaskedCopyEqualsCopyThenMaskInPlace) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (const char* pattern : {"a*", "a+"}) {  // complete at the start, or not
    auto g = grammar_from_regex(pattern, GrammarLimits{});
    ASSERT_TRUE(g.ok());
    const GrammarMatcher m(*g);
    for (size_t vocab : {size_t{64}, size_t{1000}, size_t{1003}}) {
      for (int density : {0, 1, 8, 32, 56, 63, 64}) {  // set bits per 64
        std::vector<uint64_t> bits((vocab + 63) / 64);
        for (uint64_t& w : bits) {
          for (int b = 0; b < 64; ++b) w |= static_cast<uint64_t>(static_cast<int>(rng() % 64) < density) << b;
        }
        std::vector<float> from(vocab);
        for (float& l : from) l = normal(rng);
        const int32_t ends[2] = {0, static_cast<int32_t>(vocab - 1)};
        std::vector<float> expect = from, got(vocab, 123.0f);
        const bool a = m.apply(expect, bits, ends);
        const bool b = m.apply(from, got, bits, ends);
        ASSERT_EQ(a, b) << pattern << " vocab " << vocab << " density " << density;
        if (!a) continue;  // (nothing allowed: `to` is the caller's to fill)
        for (size_t i = 0; i < vocab; ++i) {
          ASSERT_EQ(std::isinf(expect[i]), std::isinf(got[i])) << pattern << " id " << i << " density " << density;
          if (!std::isinf(expect[i])) {
            ASSERT_EQ(expect[i], got[i]);
            ASSERT_EQ(got[i], from[i]);
          }
        }
        if (m.complete()) {
          ASSERT_EQ(got[vocab - 1], from[vocab - 1]) << "a complete output keeps its end ids";
        }
      }
    }
  }
}

}  // namespace
}  // namespace plimsoll
