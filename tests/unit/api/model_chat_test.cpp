// /v1/chat/completions with a model's own chat template and tokenizer.json:
// prompt ids equal @huggingface/tokenizers' ids of @huggingface/jinja's
// rendering (tests/data/chat_templates/chat_ids.jsonl); raise_exception is a
// 422 (OpenAI's 400 on /v1); generation_config.json defaults fill what a request leaves out.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/api_server.h"
#include "api/chat_prompt.h"
#include "fake_service.h"
#include "metrics/registry.h"
#include "metrics/server_metrics.h"
#include "tokenizer/hf_tokenizer.h"
#include "test_paths.h"

namespace plimsoll::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kDataDir = fs::path(testing::source_dir()) / "tests" / "data";

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ModelChatTest : public ::testing::Test {
 protected:
  void serve(const std::string& family, const std::string& template_name, api::ApiConfig config = {}) {
    serve_source(family, read_text(kDataDir / "chat_templates" / (template_name + ".jinja")), template_name,
                 std::move(config));
  }
  void serve_source(const std::string& family, const std::string& source, const std::string& template_name,
                    api::ApiConfig config = {}) {
    auto t = HfTokenizer::load_dir((kDataDir / "hf_tokenizer" / (family + "-small")).string());
    ASSERT_TRUE(t.ok()) << t.error().message;
    tokenizer_ = std::make_unique<HfTokenizer>(std::move(t).value());
    service_ = std::make_unique<FakeService>(*tokenizer_);
    if (long_prompts_) {
      service_->limits_.max_input_tokens = 4096;
      service_->limits_.max_total_tokens = 4200;
    }
    const std::string eos = eos_ ? *eos_ : family == "qwen2_5" ? "<|im_end|>" : "<|eot_id|>";
    const std::string bos = bos_ ? *bos_ : family == "qwen2_5" ? "" : "<|begin_of_text|>";
    auto format = api::model_chat_format(source, template_name + ".jinja", bos, eos);
    ASSERT_TRUE(format.ok()) << format.error().message;
    config.hostname = "127.0.0.1";
    config.port = 0;
    config.threads = 8;
    server_ = std::make_unique<api::ApiServer>(config, *service_, *tokenizer_, metrics_, *format);
    ASSERT_TRUE(server_->start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10, 0);
  }
  httplib::Result chat(const json& body) {
    return client_->Post("/v1/chat/completions", body.dump(), "application/json");
  }
  // POSTs `body`, expects 200, and returns what reached the service.
  sched::GenerationRequest submitted(const std::string& path, const json& body) {
    auto res = client_->Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no response");
    const auto items = service_->last_items();
    return items.empty() ? sched::GenerationRequest{} : items.at(0);
  }

  bool long_prompts_ = false;           // prompts up to 4096 tokens (FakeService: 64)
  std::optional<std::string> bos_, eos_;  // the template's bos_token / eos_token (unset: the family's)
  metrics::MetricsRegistry registry_;
  metrics::ServerMetrics metrics_{registry_};
  std::unique_ptr<HfTokenizer> tokenizer_;
  std::unique_ptr<FakeService> service_;
  std::unique_ptr<api::ApiServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ModelChatTest, PromptIdsEqualTheReferenceRenderingsIds) {
  std::ifstream in(kDataDir / "chat_templates" / "chat_ids.jsonl");
  int checked = 0;
  std::string current;
  for (std::string line; std::getline(in, line);) {
    const json r = json::parse(line);
    const std::string family = r["template"] == "qwen2_5" ? "qwen2_5" : "llama3";
    if (family != current) {
      server_.reset();
      serve(family, r["template"].get<std::string>());
      current = family;
    }
    auto res = chat({{"messages", r["messages"]}, {"max_tokens", 1}});
    ASSERT_TRUE(res);
    const auto want = r["ids"].get<std::vector<int32_t>>();
    if (static_cast<int64_t>(want.size()) > service_->limits().max_input_tokens) {  // FakeService: 64
      EXPECT_EQ(res->status, 400) << r["conversation"];  // OpenAI's status for a 422
      continue;
    }
    ASSERT_EQ(res->status, 200) << r["template"] << " " << r["conversation"] << ": " << res->body;
    EXPECT_EQ(service_->last_items().at(0).prompt_ids, want) << r["template"] << " " << r["conversation"];
    EXPECT_EQ(json::parse(res->body)["usage"]["prompt_tokens"], want.size());
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

// Messages as OpenAI clients send them (content as text parts, tool-call arguments
// as JSON text) against Python jinja2's rendering of what the route hands the
// template (tests/data/chat_templates/openai_renders.jsonl, recorded by
// tests/reference/record_tool_renders.py): Gemma 3 iterates the parts (and trims
// each), templates that only print strings get them joined, Qwen3's `is string`
// test prints the arguments as sent, tojson-only templates get them parsed.
TEST_F(ModelChatTest, OpenAiMessagesRenderAsRecorded) {
  std::ifstream in(kDataDir / "chat_templates" / "openai_renders.jsonl");
  ASSERT_TRUE(in) << "openai_renders.jsonl missing";
  long_prompts_ = true;
  int checked = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::ordered_json r = nlohmann::ordered_json::parse(line);  // the tools in document order
    const std::string name = r["template"];
    const std::string family = name.starts_with("qwen") ? "qwen2_5" : "llama3";
    const fs::path file = name == "qwen3" || name == "mistral_nemo" ? kDataDir / "tool_templates" / (name + ".jinja")
                                                                : kDataDir / "chat_templates" / (name + ".jinja");
    bos_ = r["bos_token"].get<std::string>();
    eos_ = r["eos_token"].get<std::string>();
    server_.reset();
    serve_source(family, read_text(file), name);
    nlohmann::ordered_json body = {{"messages", r["request"]["messages"]}, {"max_tokens", 1}};
    if (!r["request"]["tools"].is_null()) body["tools"] = r["request"]["tools"];
    auto res = client_->Post("/v1/chat/completions", body.dump(), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << r["case"] << ": " << res->body;
    const std::string want = r["output"];
    const auto ids = service_->last_items().at(0).prompt_ids;
    EXPECT_EQ(ids, tokenizer_->encode(want, false))
        << r["case"] << ": rendered\n" << tokenizer_->decode(ids) << "\nwant\n" << want;
    ++checked;
  }
  EXPECT_EQ(checked, 7);
}

TEST_F(ModelChatTest, RaiseExceptionIs400WithTheTemplatesMessage) {
  // mistral.jinja raises when roles do not alternate; any tokenizer renders it.
  serve("llama3", "mistral");
  auto res = chat({{"messages", {{{"role", "user"}, {"content", "a"}}, {{"role", "user"}, {"content", "b"}}}}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;  // OpenAI's status for a validation error
  EXPECT_NE(json::parse(res->body)["error"]["message"].get<std::string>().find(
                "Conversation roles must alternate user/assistant/user/assistant"),
            std::string::npos)
      << res->body;
}

// A hostile template's render stops at its budget: the output budget is the
// longest prompt max_input_tokens allows ((64 + 2) x the longest token's
// bytes), and the error (422, sent as OpenAI's 400) names the budget and its value.
const json kHello = {{"messages", {{{"role", "user"}, {"content", "hello"}}}}};

TEST_F(ModelChatTest, ARenderOverItsOutputBudgetIs400NamingTheBudget) {
  serve_source("llama3",
               "{% for i in range(1000) %}{% for j in range(1000) %}{{ messages[0].content }}{% endfor %}{% endfor %}",
               "loop");
  auto res = chat(kHello);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  const std::string budget = std::to_string(66 * tokenizer_->max_token_bytes());
  EXPECT_NE(res->body.find("the rendered text would pass the output budget of " + budget + " bytes"),
            std::string::npos)
      << res->body;

}

// The reported case: a message repeated 10^8 times is refused before the
// 500 MB string is built.
TEST_F(ModelChatTest, ARepeatedMessageIsRefusedBeforeItIsBuilt) {
  serve_source("llama3", "{{ messages[0].content * 100000000 }}", "repeat");
  auto res = chat(kHello);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_NE(res->body.find("'*' (5 bytes x 100000000) would build 500000000 bytes"), std::string::npos) << res->body;
  EXPECT_NE(res->body.find("held-bytes budget"), std::string::npos) << res->body;

}

// What a render may hold is reserved from admission's request budget before
// it runs; a budget too small for it answers with admission's refusal.
TEST_F(ModelChatTest, TheRenderReservesItsHeldBytesFirst) {
  serve("llama3", "llama3");
  const std::string never = "{% for i in range(1000000) %}{{ i }}{% endfor %}";  // over its output budget if run
  const int64_t need = api::chat_render_reserve_bytes({66 * tokenizer_->max_token_bytes()});
  auto res = chat(kHello);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  const std::vector<int64_t> reserved = service_->reserved();
  EXPECT_NE(std::find(reserved.begin(), reserved.end(), need), reserved.end()) << need;
  serve_source("llama3", never, "never");  // a new service
  service_->reserve_limit_bytes_ = need - 1;
  res = chat(kHello);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;  // OpenAI's status for a 422
  EXPECT_NE(res->body.find("rendering the chat template needs " + std::to_string(need)), std::string::npos)
      << res->body;
}

// The reported SIGFPE: INT64_MIN % -1 is 0 (as in Python), INT64_MIN // -1 an error.
TEST_F(ModelChatTest, IntegerOverflowInATemplateIs400) {
  serve_source("llama3", "{{ (-9223372036854775807 - 1) % -1 }}{{ (-9223372036854775807 - 1) // -1 }}", "fpe");
  auto res = chat(kHello);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_NE(res->body.find("integer overflow in -9223372036854775808 // -1"), std::string::npos) << res->body;
}

TEST_F(ModelChatTest, GenerationConfigDefaultsFillWhatTheRequestLeavesOut) {
  api::ApiConfig config;
  config.generation_defaults.do_sample = true;
  config.generation_defaults.temperature = 0.6;
  config.generation_defaults.top_p = 0.9;
  config.generation_defaults.top_k = 20;
  config.generation_defaults.repetition_penalty = 1.1;
  config.generation_defaults.max_new_tokens = 7;
  serve("qwen2_5", "qwen2_5", config);
  const json hi = {{{"role", "user"}, {"content", "hi"}}};
  SamplingParams p = submitted("/v1/chat/completions", {{"messages", hi}}).params;
  EXPECT_TRUE(p.do_sample);
  EXPECT_FLOAT_EQ(p.temperature, 0.6f);
  EXPECT_FLOAT_EQ(p.top_p, 0.9f);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.1f);
  EXPECT_EQ(p.max_new_tokens, 7);
  // The request's own fields win; temperature 0 is greedy.
  p = submitted("/v1/chat/completions", {{"messages", hi}, {"temperature", 0}, {"max_tokens", 3}}).params;
  EXPECT_FALSE(p.samples());
  EXPECT_EQ(p.max_new_tokens, 3);
  p = submitted("/v1/chat/completions", {{"messages", hi}, {"top_p", 0.5}}).params;
  EXPECT_FLOAT_EQ(p.top_p, 0.5f);
  EXPECT_FLOAT_EQ(p.temperature, 0.6f);
  // TGI: parameters without sampling fields take the model's.
  p = submitted("/generate", {{"inputs", "hi"}, {"parameters", {{"details", true}}}}).params;
  EXPECT_FLOAT_EQ(p.temperature, 0.6f);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_EQ(p.max_new_tokens, 7);
  // TGI: do_sample false is greedy, whatever the model's warpers.
  p = submitted("/generate", {{"inputs", "hi"}, {"parameters", {{"do_sample", false}}}}).params;
  EXPECT_FALSE(p.samples());
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.1f);
}

TEST_F(ModelChatTest, GreedyModelDefaultsAndMaxLength) {
  api::ApiConfig config;
  config.generation_defaults.do_sample = false;
  config.generation_defaults.temperature = 0.6;  // ignored: the model decodes greedily
  config.generation_defaults.max_length = 20;
  serve("qwen2_5", "qwen2_5", config);
  const sched::GenerationRequest item = submitted("/v1/completions", {{"prompt", "Hello world"}});
  EXPECT_FALSE(item.params.samples());
  EXPECT_EQ(item.params.max_new_tokens, 20 - static_cast<int64_t>(item.prompt_ids.size()));
}

}  // namespace
}  // namespace plimsoll::testing
