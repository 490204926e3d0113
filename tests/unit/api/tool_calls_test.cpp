// Tool calls per template family: detection from real templates, parsing
// (unparseable text stays content), the stream's hold-back point, and the
// grammar for `required` / named choices: with random logits over the
// stories260K vocabulary (many seeds) every output parses back into a call
// whose arguments satisfy the function's schema.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "api/generic_tools.h"
#include "api/tool_call_scan.h"
#include "api/tool_calls.h"
#include "engine/grammar/grammar_sources.h"
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

TEST(GenericTools, ParsesCallsRepliesAndLeavesOtherTextWhole) {
  ParsedAnswer p = parse_tool_calls(ToolFormat::kGeneric,
      " {\"tool_calls\": [{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"parameters\": {}}]}");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(p.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(p.content, "");
  // llama.cpp's own spellings: "arguments", and {"tool_call": {...}}.
  p = parse_tool_calls(ToolFormat::kGeneric, "{\"tool_call\": {\"name\": \"f\", \"arguments\": {\"a\": 1}}}");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"a\":1}");
  p = parse_tool_calls(ToolFormat::kGeneric, "{\"response\": \"Hi \\\"there\\\"\"}");
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, "Hi \"there\"");
  for (const std::string text : {"{\"tool_calls\": [{\"name\": \"f\", \"parameters\": {\"a\"", "{\"tool_calls\": []}",
                                 "{\"other\": 1}", "plain words"}) {
    p = parse_tool_calls(ToolFormat::kGeneric, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(GenericTools, GrammarAllowsCallsOrAReplyAsAsked) {
  const std::vector<ToolFunction> fns = {{"get_weather", kWeatherParams, 0},
                                         {"get_time", json::parse(R"({"type":"object","properties":{}})"), 1}};
  auto accepts = [](const Grammar& g, const std::string& text) { return g.matches(text); };
  const std::string two = "{\"tool_calls\": [{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}}, "
                          "{\"name\": \"get_time\", \"parameters\": {}}]}";
  const std::string one = "{\"tool_calls\": [{\"name\": \"get_time\", \"parameters\": {}}]}";
  const std::string reply = "{\"response\": \"Hello\"}";
  auto auto_parallel = grammar_from_json_schema(generic_tool_schema(fns, {true, true}), GrammarLimits{});
  ASSERT_TRUE(auto_parallel.ok()) << auto_parallel.error().message;
  EXPECT_TRUE(accepts(**auto_parallel, two));
  EXPECT_TRUE(accepts(**auto_parallel, one));
  EXPECT_TRUE(accepts(**auto_parallel, reply));
  EXPECT_FALSE(accepts(**auto_parallel, "{\"tool_calls\": [{\"name\": \"nope\", \"parameters\": {}}]}"));
  EXPECT_FALSE(accepts(**auto_parallel, "{\"tool_calls\": [{\"name\": \"get_time\", \"parameters\": {\"x\": 1}}]}"));
  // Local references inside a function's parameters still resolve in the combined schema.
  const std::vector<ToolFunction> with_refs = {
      {"a", json::parse(R"({"type":"object","properties":{"p":{"$ref":"#/$defs/P"}},"required":["p"],
                            "$defs":{"P":{"type":"string","enum":["x"]}}})"), 0},
      {"b", json::parse(R"({"type":"object","properties":{"p":{"$ref":"#/definitions/P"}},"required":["p"],
                            "definitions":{"P":{"type":"integer","enum":[7]}}})"), 1}};
  auto refs = grammar_from_json_schema(generic_tool_schema(with_refs, {false, true}), GrammarLimits{});
  ASSERT_TRUE(refs.ok()) << refs.error().message;
  EXPECT_TRUE(accepts(**refs, "{\"tool_calls\": [{\"name\": \"a\", \"parameters\": {\"p\": \"x\"}}, "
                              "{\"name\": \"b\", \"parameters\": {\"p\": 7}}]}"));
  EXPECT_FALSE(accepts(**refs, "{\"tool_calls\": [{\"name\": \"b\", \"parameters\": {\"p\": \"x\"}}]}"));
  auto required_single = grammar_from_json_schema(generic_tool_schema(fns, {false, false}), GrammarLimits{});
  ASSERT_TRUE(required_single.ok()) << required_single.error().message;
  EXPECT_TRUE(accepts(**required_single, one));
  EXPECT_FALSE(accepts(**required_single, two));    // parallel_tool_calls false: one call
  EXPECT_FALSE(accepts(**required_single, reply));  // required: no reply
}

TEST(GenericTools, ToolsGoInASystemMessageAndPastCallsAsTheirJson) {
  const OrderedJson tools = OrderedJson::parse(
      R"([{"type":"function","function":{"name":"get_time","description":"now","parameters":{"type":"object"}}}])");
  std::vector<ChatMessage> messages = {{"user", "What time is it?", false, OrderedJson()},
                                       {"assistant", "", true, OrderedJson::parse(R"({"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_time","arguments":{}}}]})")},
                                       {"tool", "12:00", false, OrderedJson::parse(R"({"tool_call_id":"call_1"})")}};
  add_generic_tools(tools, {true, true}, &messages);
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0].role, "system");
  EXPECT_NE(messages[0].content.find("{\"name\":\"get_time\",\"description\":\"now\""), std::string::npos) << messages[0].content;
  EXPECT_NE(messages[0].content.find("{\"response\": <your reply>}"), std::string::npos) << messages[0].content;
  EXPECT_EQ(messages[2].content, "{\"tool_calls\":[{\"name\":\"get_time\",\"parameters\":{}}]}");
  EXPECT_FALSE(messages[2].content_null);
  EXPECT_EQ(messages[3].role, "user");
  EXPECT_EQ(messages[3].content, "{\"tool_response\":{\"tool_call_id\":\"call_1\",\"content\":\"12:00\"}}");
  // A system message of the client's own gets the description appended.
  std::vector<ChatMessage> with_system = {{"system", "Be brief.", false, OrderedJson()}, {"user", "hi", false, OrderedJson()}};
  add_generic_tools(tools, {false, false}, &with_system);
  ASSERT_EQ(with_system.size(), 2u);
  EXPECT_EQ(with_system[0].content.rfind("Be brief.\n\nTools: ", 0), 0u) << with_system[0].content;
  EXPECT_EQ(with_system[0].content.find("response"), std::string::npos);
}

TEST(ToolScan, FindsNamesAndArgumentsAsTheyGrow) {
  const std::string whole = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"s\": \"}<tool_call>\", \"n\": [1, {\"x\": 2}]}}\n</tool_call>";
  std::vector<CallProgress> seen;
  for (size_t n = 0; n <= whole.size(); ++n) {
    seen = scan_tool_calls(ToolFormat::kHermes, std::string_view(whole).substr(0, n));
    if (seen.empty()) continue;
    const CallProgress& c = seen[0];
    if (c.args_begin != std::string_view::npos) {
      EXPECT_TRUE(c.has_name) << n;
      EXPECT_LE(c.args_end, n);
    }
  }
  ASSERT_EQ(seen.size(), 1u);  // the "<tool_call>" inside the string is not a second call
  EXPECT_EQ(seen[0].name, "f");
  EXPECT_TRUE(seen[0].args_done);
  EXPECT_EQ(whole.substr(seen[0].args_begin, seen[0].args_end - seen[0].args_begin),
            "{\"s\": \"}<tool_call>\", \"n\": [1, {\"x\": 2}]}");
  // The generic list, part-way through its second call's arguments.
  const std::string generic = "{\"tool_calls\": [{\"name\": \"a\", \"parameters\": {}}, {\"name\": \"b\", \"parameters\": {\"q\": \"x";
  const auto calls = scan_tool_calls(ToolFormat::kGeneric, generic);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].name, "b");
  EXPECT_FALSE(calls[1].args_done);
  EXPECT_EQ(generic.substr(calls[1].args_begin), "{\"q\": \"x");
  EXPECT_TRUE(scan_tool_calls(ToolFormat::kGeneric, "{\"response\": \"hi").empty());
  // Mistral and Llama 3 lists.
  EXPECT_EQ(scan_tool_calls(ToolFormat::kMistral, "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\"").size(), 2u);
  EXPECT_EQ(scan_tool_calls(ToolFormat::kLlama3Json, "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {}}").size(), 2u);
  // The generic reply, decoded as far as its escapes are whole.
  const std::string reply = "{\"response\": \"Hi \\\"you\\\"\\n\\u00e9\\ud83d\\ude00!\"}";
  std::string last;
  for (size_t n = 0; n <= reply.size(); ++n) {
    const auto so_far = generic_reply_so_far(std::string_view(reply).substr(0, n));
    if (!so_far) continue;
    EXPECT_EQ(so_far->rfind(last, 0), 0u) << n << ": " << *so_far;  // it only grows
    last = *so_far;
  }
  EXPECT_EQ(last, "Hi \"you\"\n\u00e9\U0001F600!");
  EXPECT_FALSE(generic_reply_so_far("{\"tool_calls\": [").has_value());
  // The answer whole keeps the arguments as written.
  std::vector<ToolCall> parsed = parse_tool_calls(ToolFormat::kHermes, whole).calls;
  use_written_arguments(ToolFormat::kHermes, whole, &parsed);
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0].arguments, "{\"s\": \"}<tool_call>\", \"n\": [1, {\"x\": 2}]}");
}

}  // namespace
}  // namespace plimsoll::api
