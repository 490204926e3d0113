// ChatTemplate with tools against Python jinja2 set up as transformers does
// (tests/reference/record_tool_renders.py -> tests/data/tool_templates/renders.jsonl):
// Qwen2.5 (<tool_call>), Llama 3.2 (JSON calls), Mistral Nemo ([TOOL_CALLS]).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "chat/chat_template.h"
#include "test_paths.h"

namespace plimsoll {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

const fs::path kData = fs::path(testing::source_dir()) / "tests" / "data";

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path template_path(const std::string& name) {
  return name == "qwen2_5" ? kData / "chat_templates" / "qwen2_5.jinja" : kData / "tool_templates" / (name + ".jinja");
}

TEST(ToolRenders, EqualJinja2sRenderings) {
  std::ifstream in(kData / "tool_templates" / "renders.jsonl");
  ASSERT_TRUE(in) << "renders.jsonl missing";
  int checked = 0;
  for (std::string line; std::getline(in, line);) {
    const json record = json::parse(line);
    const std::string name = record["template"].get<std::string>() + "/" + record["conversation"].get<std::string>();
    auto parsed = ChatTemplate::parse(read_all(template_path(record["template"])));
    ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.error().message;
    const json& c = record["context"];
    ChatRenderInput input;
    input.messages = c["messages"];
    input.tools = c["tools"];
    input.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    input.bos_token = c["bos_token"].get<std::string>();
    input.eos_token = c["eos_token"].get<std::string>();
    input.extra["date_string"] = c["date_string"];
    const Result<std::string> out = parsed->render(input);
    if (record.contains("error")) {
      ASSERT_FALSE(out.ok()) << name;
      EXPECT_NE(out.error().message.find(record["error"].get<std::string>()), std::string::npos) << name;
    } else {
      ASSERT_TRUE(out.ok()) << name << ": " << out.error().message;
      EXPECT_EQ(*out, record["output"].get<std::string>()) << name;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 12);
}

}  // namespace
}  // namespace plimsoll
