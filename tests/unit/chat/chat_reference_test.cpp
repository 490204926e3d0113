// ChatTemplate against @huggingface/jinja: every template in
// tests/data/chat_templates/ over a set of conversations (renders.jsonl).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "chat/chat_template.h"
#include "test_paths.h"

namespace plimsoll {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

const fs::path kDir = fs::path(testing::source_dir()) / "tests" / "data" / "chat_templates";

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// One feature template with its variables, rendered as by @huggingface/jinja.
void check_snippet(const json& record) {
  const std::string name = record["conversation"];
  Result<ChatTemplate> parsed = ChatTemplate::parse(record["source"].get<std::string>());
  ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.error().message;
  const Result<std::string> out = parsed->render_json(record["context"]);
  if (record.contains("error")) {
    ASSERT_FALSE(out.ok()) << name << " rendered " << json(*out).dump();
    EXPECT_NE(out.error().message.find(record["error"].get<std::string>()), std::string::npos)
        << name << ": " << out.error().message;
    return;
  }
  ASSERT_TRUE(out.ok()) << name << ": " << out.error().message;
  EXPECT_EQ(*out, record["output"].get<std::string>()) << name;
}

TEST(ChatReference, EveryTemplateRendersLikeHuggingFaceJinja) {
  std::map<std::string, ChatTemplate> templates;
  std::ifstream in(kDir / "renders.jsonl");
  int cases = 0, errors = 0, snippets = 0;
  std::set<std::string> names;
  for (std::string line; std::getline(in, line);) {
    const json record = json::parse(line);
    const std::string name = record["template"];
    if (name == "snippet") {
      check_snippet(record);
      ++snippets;
      continue;
    }
    if (!templates.contains(name)) {
      Result<ChatTemplate> parsed = ChatTemplate::parse(read_all(kDir / (name + ".jinja")));
      ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.error().message;
      templates.emplace(name, *parsed);
    }
    ChatRenderInput input;
    input.messages = record["messages"];
    input.add_generation_prompt = record["add_generation_prompt"];
    input.bos_token = record["bos_token"];
    input.eos_token = record["eos_token"];
    const Result<std::string> out = templates.at(name).render(input);
    const std::string where = name + " / " + record["conversation"].get<std::string>() +
                              (input.add_generation_prompt ? " / generation prompt" : "");
    ++cases;
    names.insert(name);
    if (record.contains("error")) {
      ++errors;
      ASSERT_FALSE(out.ok()) << where << " rendered " << json(*out).dump();
      EXPECT_EQ(out.error().code, ErrorCode::kInvalidArgument) << where;
      EXPECT_EQ(out.error().message, "chat template raised: " + record["error"].get<std::string>()) << where;
      continue;
    }
    ASSERT_TRUE(out.ok()) << where << ": " << out.error().message;
    EXPECT_EQ(*out, record["output"].get<std::string>()) << where;
  }
  EXPECT_GE(names.size(), 9u);
  EXPECT_GE(cases, 100);
  EXPECT_GT(errors, 0);
  EXPECT_GE(snippets, 25);
}

// Builtins where Python's jinja2 (transformers) is the reference and differs
// from @huggingface/jinja: str.strip's Unicode whitespace (U+00A0, U+3000,
// U+2003 stripped; U+FEFF kept). Recorded by tests/reference/record_tool_renders.py.
TEST(ChatReference, SnippetsRenderLikePythonJinja2) {
  std::ifstream in(kDir / "python_snippets.jsonl");
  ASSERT_TRUE(in) << (kDir / "python_snippets.jsonl");
  int snippets = 0;
  for (std::string line; std::getline(in, line);) {
    check_snippet(json::parse(line));
    ++snippets;
  }
  EXPECT_GE(snippets, 7);
}

}  // namespace
}  // namespace plimsoll
