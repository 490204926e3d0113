// Tool calls per template family: detection from real templates, parsing
// (unparseable text stays content), the stream's hold-back point, and the
// grammar for `required` / named choices: with random logits over the
// stories260K vocabulary (many seeds) every output parses back into a call
// whose arguments satisfy the function's schema.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "api/tool_calls.h"
#include "engine/grammar/token_trie.h"
#include "schema_check.h"
#include "test_paths.h"
#include "tokenizer/tokenizer_loading.h"

namespace plimsoll::api {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kData = fs::path(testing::source_dir()) / "tests" / "data";

TEST(ToolFormat, DetectedFromRealTemplates) {
  EXPECT_EQ(detect_tool_format(testing::read_file((kData / "chat_templates" / "qwen2_5.jinja").string())),
            ToolFormat::kHermes);
  EXPECT_EQ(detect_tool_format(testing::read_file((kData / "tool_templates" / "llama3_2.jinja").string())),
            ToolFormat::kLlama3Json);
  EXPECT_EQ(detect_tool_format(testing::read_file((kData / "tool_templates" / "mistral_nemo.jinja").string())),
            ToolFormat::kMistral);
  // Templates without tool syntax (Llama 3 base, Zephyr, ChatML).
  for (const char* name : {"llama3", "zephyr", "chatml", "mistral"}) {
    const std::string source = testing::read_file((kData / "chat_templates" / (std::string(name) + ".jinja")).string());
    ASSERT_FALSE(source.empty()) << name;
    EXPECT_EQ(detect_tool_format(source), ToolFormat::kNone) << name;
  }
}

TEST(ToolParse, HermesCallsAndContent) {
  const std::string text =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  const ParsedAnswer p = parse_tool_calls(ToolFormat::kHermes, text);
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.content, "Let me check.");
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  EXPECT_EQ(p.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_NE(p.calls[0].id, p.calls[1].id);
  // Strings may hold the close tag or braces (random weights write them).
  const ParsedAnswer tricky = parse_tool_calls(
      ToolFormat::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"s\": \"}</tool_call> \\\" {\"}}\n</tool_call>");
  ASSERT_EQ(tricky.calls.size(), 1u);
  EXPECT_EQ(json::parse(tricky.calls[0].arguments)["s"], "}</tool_call> \" {");
  // Ended by EOS right after the JSON (no closing tag): still a call.
  EXPECT_EQ(parse_tool_calls(ToolFormat::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2]}}").calls.size(), 1u);
}

TEST(ToolParse, UnparseableStaysContent) {
  for (const std::string text : {"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}\n</tool_call>",  // cut JSON
                                 "<tool_call>{\"arguments\": {}}</tool_call>",                            // no name
                                 "<tool_call>{\"name\": \"f\", \"arguments\": \"x\"}</tool_call>",        // not an object
                                 "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call> trailing words",
                                 "just text"}) {
    const ParsedAnswer p = parse_tool_calls(ToolFormat::kHermes, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
  EXPECT_TRUE(parse_tool_calls(ToolFormat::kMistral, "[TOOL_CALLS][{\"name\": \"f\"}]").calls.empty());
  EXPECT_TRUE(parse_tool_calls(ToolFormat::kLlama3Json, "The answer is {\"name\": \"f\", \"parameters\": {}}").calls.empty());
  EXPECT_TRUE(parse_tool_calls(ToolFormat::kNone, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>").calls.empty());
}

TEST(ToolParse, Llama3JsonAndMistral) {
  ParsedAnswer p = parse_tool_calls(ToolFormat::kLlama3Json, " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Zürich\"}}");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.content, "");
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Zürich\"}");
  p = parse_tool_calls(ToolFormat::kLlama3Json,
                       "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"arguments\": {\"x\": 1}}");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[1].name, "b");
  EXPECT_EQ(parse_tool_calls(ToolFormat::kLlama3Json, "{\"name\": \"a\", \"parameters\": {\"q\": \"x; y\"}}").calls.size(), 1u);
  p = parse_tool_calls(ToolFormat::kMistral,
                       "ok [TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"z\": 1, \"y\": 2}}, {\"name\": \"b\", \"arguments\": {}}]");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.content, "ok");
  EXPECT_EQ(p.calls[0].arguments, "{\"z\":1,\"y\":2}");  // the model's key order
  EXPECT_EQ(p.calls[0].id.size(), 9u);                  // Mistral's template requires 9 alphanumerics
}

TEST(ToolStream, HoldsBackFromWhereACallMayBegin) {
  EXPECT_EQ(tool_call_hold_from(ToolFormat::kHermes, "Hello"), 5u);
  EXPECT_EQ(tool_call_hold_from(ToolFormat::kHermes, "Hello <tool"), 6u);
  EXPECT_EQ(tool_call_hold_from(ToolFormat::kHermes, "Hi <tool_call>\n{\"na"), 3u);
  EXPECT_EQ(tool_call_hold_from(ToolFormat::kHermes, "a < b"), 5u);
  EXPECT_EQ(tool_call_hold_from(ToolFormat::kMistral, "x [TOOL_"), 2u);
  EXPECT_EQ(tool_call_hold_from(ToolFormat::kLlama3Json, "  "), 0u);
  EXPECT_EQ(tool_call_hold_from(ToolFormat::kLlama3Json, " {\"name"), 0u);
  EXPECT_EQ(tool_call_hold_from(ToolFormat::kLlama3Json, "<|python"), 0u);
  EXPECT_EQ(tool_call_hold_from(ToolFormat::kLlama3Json, "Sure {"), 6u);
}

const json kWeatherParams = json::parse(R"({
  "type": "object",
  "properties": {
    "city": {"type": "string", "maxLength": 24},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer", "minimum": 0}
  },
  "required": ["city", "days"],
  "additionalProperties": false
})");

TEST(ToolGrammar, AcceptsTheFamilysCallAndRefusesOthers) {
  const std::vector<ToolFunction> fns = {{"get_weather", kWeatherParams, 0}, {"get_time", json{{"type", "object"}}, 1}};
  auto hermes = tool_call_grammar(ToolFormat::kHermes, fns, GrammarLimits{});
  ASSERT_TRUE(hermes.ok()) << hermes.error().message;
  const Grammar& g = **hermes;
  auto matches = [&](const std::string& text) { return g.matches(text); };
  EXPECT_TRUE(matches("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>"));
  EXPECT_TRUE(matches("<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(matches("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"));
  EXPECT_FALSE(matches("<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(matches("Sure! <tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
  // An unsupported keyword is refused naming the request's field.
  const std::vector<ToolFunction> bad = {{"f", json::parse(R"({"type":"object","properties":{"a":{"type":"integer","if":9}}})"), 3}};
  auto refused = tool_call_grammar(ToolFormat::kMistral, bad, GrammarLimits{});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("`tools[3].function.parameters`"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("`if`"), std::string::npos) << refused.error().message;
}

// Random logits under the grammar: the text is always a call that parses.
std::string run_random(const Grammar& g, const TokenTrie& trie, int32_t eos, uint64_t seed, int64_t max_tokens) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  GrammarMatcher m(std::shared_ptr<const Grammar>(&g, [](const Grammar*) {}));
  GrammarScratch scratch;
  std::vector<float> logits(static_cast<size_t>(trie.vocab_size()));
  std::string out;
  const int32_t ends[1] = {eos};
  for (int64_t t = 0; t < max_tokens; ++t) {
    for (float& l : logits) l = normal(rng);
    EXPECT_TRUE(m.mask(logits, trie, max_tokens - t, ends, scratch));
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i) best = logits[i] > logits[best] ? i : best;
    if (static_cast<int32_t>(best) == eos) break;
    out += trie.text(static_cast<int32_t>(best));
    m.advance(static_cast<int32_t>(best), trie, scratch);
  }
  return out;
}

TEST(ToolGrammar, RandomLogitsOnStories260KAlwaysWriteAWellFormedCall) {
  auto tok = load_tokenizer_alone(testing::stories_path("tok512.bin"));
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  const TokenTrie trie = TokenTrie::build(*tok->tokenizer);
  const std::vector<ToolFunction> fns = {{"get_weather", kWeatherParams, 0},
                                         {"get_time", json::parse(R"({"type":"object","properties":{}})"), 1}};
  for (ToolFormat format : {ToolFormat::kHermes, ToolFormat::kLlama3Json, ToolFormat::kMistral}) {
    for (bool named : {false, true}) {
      const std::vector<ToolFunction> forced = named ? std::vector<ToolFunction>{fns[0]} : fns;
      auto g = tool_call_grammar(format, forced, GrammarLimits{});
      ASSERT_TRUE(g.ok()) << g.error().message;
      for (uint64_t seed = 0; seed < 40; ++seed) {
        const int64_t max_tokens = 120 + static_cast<int64_t>(seed % 4) * 40;
        const std::string out = run_random(**g, trie, tok->tokenizer->eos_id(), seed, max_tokens);
        const ParsedAnswer p = parse_tool_calls(format, out);
        ASSERT_EQ(p.calls.size(), 1u) << tool_format_name(format) << " seed " << seed << ": " << out;
        EXPECT_EQ(p.content, "");
        if (named) {
          EXPECT_EQ(p.calls[0].name, "get_weather");
        }
        const json args = json::parse(p.calls[0].arguments);
        const json& schema = p.calls[0].name == "get_weather" ? fns[0].parameters : fns[1].parameters;
        EXPECT_EQ(test::schema_violation(args, schema), "") << out;
      }
    }
  }
}

}  // namespace
}  // namespace plimsoll::api
