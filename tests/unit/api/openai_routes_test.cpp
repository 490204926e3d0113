// Contract tests of the OpenAI routes: completions (string and list prompts,
// n, logprobs, usage, SSE with [DONE]), chat completions, /v1/models.
#include "api_fixture.h"
#include "engine/grammar/grammar_cache.h"

namespace plimsoll::testing {
namespace {

// Drops the fields that vary (id, created) before comparing.
json stable(json j) {
  EXPECT_TRUE(j["id"].is_string());
  EXPECT_TRUE(j["created"].is_number_integer());
  j.erase("id");
  j.erase("created");
  return j;
}

TEST_F(ApiTest, CompletionReturnsChoicesAndUsage) {
  auto r = post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 3}, {"temperature", 0}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(stable(body_json(r)), json::parse(R"({
    "object":"text_completion","model":"fake/model","system_fingerprint":"plimsoll",
    "choices":[{"index":0,"text":" he","logprobs":null,"finish_reason":"length"}],
    "usage":{"prompt_tokens":4,"completion_tokens":3,"total_tokens":7}})"));
  EXPECT_FALSE(service_.last_items()[0].params.do_sample);  // temperature 0: greedy
}

TEST_F(ApiTest, CompletionIgnoreEosReachesTheSampler) {
  auto r = post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 2}, {"ignore_eos", true}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(service_.last_items()[0].params.ignore_eos);
  r = post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 2}});
  ASSERT_TRUE(r);
  EXPECT_FALSE(service_.last_items()[0].params.ignore_eos);
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"ignore_eos", "yes"}}), 400,
                      "invalid_request_error", "`ignore_eos` must be a boolean", "ignore_eos");
}

TEST_F(ApiTest, CompletionListPromptsTimesNInOrder) {
  json body = {{"prompt", {"a", "b"}}, {"n", 2}, {"max_tokens", 1}, {"echo", true}, {"seed", 5}};
  auto r = post("/v1/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json choices = body_json(r)["choices"];
  ASSERT_EQ(choices.size(), 4u);
  EXPECT_EQ(choices[0]["text"], "a ");
  EXPECT_EQ(choices[1]["text"], "a ");
  EXPECT_EQ(choices[2]["text"], "b ");
  EXPECT_EQ(choices[3]["index"], 3);
  auto items = service_.last_items();
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(*items[0].params.seed, 5u);
  EXPECT_EQ(*items[1].params.seed, 6u);  // distinct choices
  EXPECT_EQ(body_json(r)["usage"]["prompt_tokens"], 6);  // 3 + 3, once per prompt
}

TEST_F(ApiTest, CompletionLogprobs) {
  auto r = post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 2}, {"logprobs", 1}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(body_json(r)["choices"][0]["logprobs"], json::parse(R"({
    "tokens":[" ","h"],"token_logprobs":[-0.25,-0.25],
    "top_logprobs":[{" ":-0.25},{"h":-0.25}],"text_offset":[0,1]})"));
}

TEST_F(ApiTest, CompletionStreamEndsWithDone) {
  json body = {{"prompt", "hi"}, {"max_tokens", 2}, {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  auto r = post("/v1/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  auto events = sse_data(r->body, "data: ");
  ASSERT_EQ(events.size(), 4u) << r->body;
  EXPECT_EQ(stable(json::parse(events[0])), json::parse(R"({
    "object":"text_completion","model":"fake/model","system_fingerprint":"plimsoll",
    "choices":[{"index":0,"text":" ","logprobs":null,"finish_reason":null}],"usage":null})"));
  EXPECT_EQ(json::parse(events[1])["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(json::parse(events[2])["usage"], json::parse(R"({"prompt_tokens":4,"completion_tokens":2,"total_tokens":6})"));
  EXPECT_EQ(events[3], "[DONE]");
}

TEST_F(ApiTest, CompletionValidationIsOpenAis400NamingTheParam) {
  const std::string bad = "invalid_request_error";
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"temperature", 2.5}}), 400, bad,
                      "`temperature` must be >= 0.0 and <= 2.0", "temperature");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"n", 0}}), 400, bad, "`n` must be >= 1", "n");
  expect_openai_error(post("/v1/completions", json{{"prompt", 3}}), 400, bad, "`prompt` must be", "prompt");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", -1}}), 400, bad,
                      "`max_tokens` must be strictly positive", "max_tokens");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"logprobs", 9}}), 400, bad,
                      "`logprobs` must be >= 0 and <= 5", "logprobs");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 1000}}), 400, bad,
                      "`prompt` tokens + `max_tokens` must be <= 96. Given: 4 `prompt` tokens and 1000 `max_tokens`",
                      "prompt");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"suffix", "x"}}), 400, bad, "`suffix`", "suffix");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"best_of", 1}, {"n", 2}}), 400, bad,
                      "`best_of` must be >= `n` (2)", "best_of");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"best_of", 2}, {"stream", true}}), 400, bad,
                      "`best_of` > `n` cannot be used with `stream`", "best_of");
}

TEST_F(ApiTest, ChatRendersTheTemplateAndAnswers) {
  json body = {{"model", "anything"},
               {"messages", {{{"role", "system"}, {"content", "be"}},
                             {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "hi"}}}}}}},
               {"max_tokens", 2}};
  auto r = post("/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(stable(body_json(r)), json::parse(R"({
    "object":"chat.completion","model":"fake/model","system_fingerprint":"plimsoll",
    "choices":[{"index":0,"message":{"role":"assistant","content":" h"},"logprobs":null,"finish_reason":"length"}],
    "usage":{"prompt_tokens":32,"completion_tokens":2,"total_tokens":34}})"));
  auto ids = service_.last_items()[0].prompt_ids;
  EXPECT_EQ(tokenizer_.decode(ids), "system: be\nuser: hi\nassistant:");
}

TEST_F(ApiTest, ChatStreamSendsRoleThenDeltasThenDone) {
  json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}, {"stream", true},
               {"logprobs", true}, {"top_logprobs", 1}};
  auto r = post("/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto events = sse_data(r->body, "data: ");
  ASSERT_EQ(events.size(), 3u) << r->body;
  json first = json::parse(events[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json::parse(R"({"role":"assistant","content":" "})"));
  EXPECT_EQ(first["choices"][0]["logprobs"], json::parse(R"({"content":[{"token":" ","logprob":-0.25,
      "bytes":[32],"top_logprobs":[{"token":" ","logprob":-0.25,"bytes":[32]}]}]})"));
  EXPECT_EQ(json::parse(events[1])["choices"][0]["delta"], json::parse(R"({"content":"h"})"));
  EXPECT_EQ(json::parse(events[1])["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(events[2], "[DONE]");
}

// Tools need a template with a tool-call syntax (the fallback "<role>: ..." has none).
TEST_F(ApiTest, ChatRefusesBadToolAndJsonRequestsClearly) {
  const std::string bad = "invalid_request_error";
  const json hi = {{{"role", "user"}, {"content", "hi"}}};
  expect_openai_error(post("/v1/chat/completions", json{{"messages", json::array()}}), 400, bad,
                      "`messages` must be a non-empty list", "messages");
  json tool = {{"type", "function"}, {"function", {{"name", "f"}, {"parameters", json::object()}}}};
  // Without a template's tool syntax the generic format constrains every answer: no response_format beside it.
  expect_openai_error(post("/v1/chat/completions", json{{"messages", hi}, {"tools", json::array({tool})},
                                                        {"response_format", {{"type", "json_object"}}}}),
                      400, bad, "`response_format` cannot be combined with `tools` on this model", "response_format");
  json limited = tool;
  limited["function"]["name"] = "g";
  limited["function"]["parameters"] = {{"type", "object"}, {"properties", {{"n", {{"type", "integer"}, {"not", {{"const", 3}}}}}}}};
  expect_openai_error(post("/v1/chat/completions", json{{"messages", hi}, {"tools", json::array({tool, limited})}}),
                      400, bad, "`tools[1].function.parameters`: schema at /properties/n/not: keyword `not`",
                      "tools[1].function.parameters");
  expect_openai_error(post("/v1/chat/completions", json{{"messages", hi}, {"tool_choice", "required"}}), 400, bad,
                      "`tool_choice` \"required\" or a named function needs a non-empty `tools` list", "tool_choice");
  expect_openai_error(
      post("/v1/chat/completions", json{{"messages", hi}, {"response_format", {{"type", "json_schema"}}}}), 400, bad,
      "`response_format.json_schema` must be an object", "response_format.json_schema");
  const json unsupported = {{"type", "json_schema"},
                            {"json_schema", {{"name", "x"}, {"schema", {{"type", "integer"}, {"not", {{"const", 3}}}}}}}};
  expect_openai_error(post("/v1/chat/completions", json{{"messages", hi}, {"response_format", unsupported}}), 400,
                      bad, "`response_format.json_schema.schema`: schema at /not: keyword `not` is not supported",
                      "response_format.json_schema.schema");
  // What asks for nothing is accepted: text output, no tools, tool_choice none/auto (tools with "none"); and JSON output.
  for (const json& extra : {json{{"response_format", {{"type", "text"}}}}, json{{"tools", json::array()}},
                            json{{"response_format", {{"type", "json_object"}}}},
                            json{{"tool_choice", "none"}}, json{{"tool_choice", "auto"}},
                            json{{"tools", json::array({tool})}, {"tool_choice", "none"}}}) {
    json body = {{"messages", hi}, {"max_tokens", 4}};
    body.update(extra);
    auto r = post("/v1/chat/completions", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << extra.dump() << r->body;
  }
  // TGI's response_format forms: a schema under `value` holds (json_object's is not ignored).
  const json bounded = {{"type", "object"}, {"properties", {{"n", {{"type", "integer"}, {"not", {{"const", 3}}}}}}}};
  for (const char* type : {"json", "json_object"}) {
    expect_openai_error(post("/v1/chat/completions", json{{"messages", hi}, {"max_tokens", 4},
                                                          {"response_format", {{"type", type}, {"value", bounded}}}}),
                        400, bad, "`response_format.value`: schema at /properties/n/not: keyword `not`",
                        "response_format.value");
  }
  for (const json& format : {json{{"type", "json"}, {"value", {{"type", "object"}}}},
                             json{{"type", "json_object"}, {"value", {{"type", "boolean"}}}},
                             json{{"type", "json_schema"}, {"value", {{"name", "b"}, {"schema", {{"type", "boolean"}}}}}},
                             json{{"type", "regex"}, {"value", "a|b"}}}) {
    auto r = post("/v1/chat/completions", json{{"messages", hi}, {"max_tokens", 8}, {"response_format", format}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << format.dump() << r->body;
  }
  // A grammar's shortest output is named by the route's own length field.
  expect_openai_error(post("/v1/chat/completions", json{{"messages", hi}, {"max_tokens", 1},
                                                        {"response_format", {{"type", "json_object"}}}}),
                      400, bad, "`max_tokens` of 1 is too small for the grammar", "max_tokens");
  expect_openai_error(post("/v1/chat/completions", json{{"messages", hi}, {"max_completion_tokens", 1},
                                                        {"response_format", {{"type", "json_object"}}}}),
                      400, bad, "`max_completion_tokens` of 1 is too small for the grammar", "max_completion_tokens");
}

TEST_F(ApiTest, ChatTemplateHookIsUsed) {
  stop();
  server_ = std::make_unique<api::ApiServer>(
      api::ApiConfig{.hostname = "127.0.0.1", .port = 0, .threads = 8}, service_, tokenizer_, metrics_,
      [](const std::vector<api::ChatMessage>& m, const api::ChatRenderBudget&, const OrderedJson&) -> Result<std::string> {
        if (m[0].role == "bad") return make_error(ErrorCode::kInvalidArgument, "role bad is not allowed");
        return std::string("<s>zz");
      });
  ASSERT_TRUE(server_->start().ok());
  client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  auto r = post("/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 1}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(service_.last_items()[0].prompt_ids, (std::vector<int32_t>{1, 285, 285}));  // one BOS, no dummy prefix after it
  expect_openai_error(post("/v1/chat/completions", json{{"messages", {{{"role", "bad"}, {"content", "x"}}}}}), 400,
                      "invalid_request_error", "role bad");
}

// Tools on a template without tool syntax that refuses a system role: the
// generic description goes into the first user turn instead.
TEST_F(ApiTest, GenericToolsFoldIntoTheUserTurnWhereSystemIsRefused) {
  stop();
  auto seen = std::make_shared<std::vector<api::ChatMessage>>();
  server_ = std::make_unique<api::ApiServer>(
      api::ApiConfig{.hostname = "127.0.0.1", .port = 0, .threads = 8}, service_, tokenizer_, metrics_,
      [seen](const std::vector<api::ChatMessage>& m, const api::ChatRenderBudget&, const OrderedJson&) -> Result<std::string> {
        if (m[0].role == "system") return make_error(ErrorCode::kInvalidArgument, "System role not supported");
        *seen = m;
        return std::string("zz");
      });
  ASSERT_TRUE(server_->start().ok());
  client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  const json tool = {{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {{"type", "object"}}}}}};
  auto r = post("/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                             {"tools", json::array({tool})}, {"max_tokens", 64}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  ASSERT_EQ(seen->size(), 1u);
  EXPECT_EQ((*seen)[0].role, "user");
  EXPECT_EQ((*seen)[0].content.rfind("Tools: [{\"name\":\"f\"", 0), 0u) << (*seen)[0].content;
  EXPECT_EQ((*seen)[0].content.substr((*seen)[0].content.size() - 4), "\n\nhi");
}

TEST_F(ApiTest, ModelsListsTheModel) {
  auto r = client_->Get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(body_json(r), json::parse(R"({"object":"list","data":[{"id":"fake/model","object":"model",
      "created":0,"owned_by":"plimsoll"}]})"));
}

// A schema's properties are written in the client's order, not the request
// tree's (sorted) one: the body text is read again for it, on every route.
TEST_F(ApiTest, SchemaPropertiesKeepTheClientsOrder) {
  const std::string schema = R"({"type":"object","properties":{"zeta":{"const":1},"alpha":{"const":2}},)"
                             R"("required":["zeta","alpha"],"additionalProperties":false})";
  const std::vector<std::pair<std::string, std::string>> bodies = {
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":40,)"
                               R"("response_format":{"type":"json_schema","json_schema":{"name":"x","schema":)" + schema + "}}}"},
      {"/v1/completions", R"({"prompt":"hi","max_tokens":40,"response_format":{"type":"json_schema",)"
                          R"("json_schema":{"name":"x","schema":)" + schema + "}}}"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":40,)"
                               R"("response_format":{"type":"json","value":)" + schema + "}}"},
      {"/generate", R"({"inputs":"hi","parameters":{"max_new_tokens":40,"grammar":{"type":"json","value":)" + schema + "}}}"},
      {"/generate", R"({"inputs":"hi","parameters":{"max_new_tokens":40,"grammar":{"type":"json","value":)" +
                        json(schema).dump() + "}}}"},  // the schema as JSON text
  };
  for (const auto& [route, body] : bodies) {
    auto r = post(route, body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << route << " " << body << " " << r->body;
    const std::shared_ptr<const Grammar> grammar = service_.last_items()[0].params.grammar;  // last_items() is a copy
    ASSERT_TRUE(grammar) << body;
    EXPECT_TRUE(grammar->matches(R"({"zeta": 1, "alpha": 2})")) << body;
    EXPECT_FALSE(grammar->matches(R"({"alpha": 2, "zeta": 1})")) << body;
  }
}

// The server's grammar cache: the same schema on any route is compiled once and
// shared (pinned, charged to the cache's plan line, not to the request).
TEST_F(ApiTest, TheSameSchemaSharesOneCachedGrammarAcrossRequestsAndRoutes) {
  GrammarCache cache(int64_t{64} << 20);
  stop();
  api::ApiConfig config;
  config.hostname = "127.0.0.1";
  config.port = 0;
  server_ = std::make_unique<api::ApiServer>(config, service_, tokenizer_, metrics_);
  server_->set_grammar_cache(&cache);
  ASSERT_TRUE(server_->start().ok());
  client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  client_->set_read_timeout(10, 0);
  const json schema = json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})");
  const json chat = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                     {"max_tokens", 32},
                     {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", schema}}}}}};
  auto r = post("/v1/chat/completions", chat);
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
  const SamplingParams first = service_.last_items().at(0).params;
  r = post("/v1/chat/completions", chat);
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
  const SamplingParams second = service_.last_items().at(0).params;
  r = post("/generate", json{{"inputs", "hi"},
                             {"parameters", {{"max_new_tokens", 32}, {"grammar", {{"type", "json"}, {"value", schema}}}}}});
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
  const SamplingParams tgi = service_.last_items().at(0).params;
  ASSERT_TRUE(first.grammar && second.grammar && tgi.grammar);
  EXPECT_TRUE(first.grammar_cached);
  EXPECT_TRUE(tgi.grammar_cached);
  EXPECT_EQ(first.grammar.get(), second.grammar.get());
  EXPECT_EQ(first.grammar.get(), tgi.grammar.get());
  GrammarCacheStats st = cache.stats();
  EXPECT_EQ(st.misses, 1);
  EXPECT_EQ(st.hits, 2);
  EXPECT_EQ(st.entries, 1);
  // Another schema is another grammar; a regex too.
  r = post("/generate", json{{"inputs", "hi"},
                             {"parameters", {{"max_new_tokens", 8}, {"grammar", {{"type", "regex"}, {"value", "[ab]+"}}}}}});
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
  EXPECT_TRUE(service_.last_items().at(0).params.grammar_cached);
  st = cache.stats();
  EXPECT_EQ(st.misses, 2);
  EXPECT_EQ(st.entries, 2);
  stop();  // the requests' copies go with the server and the fake's records
}

}  // namespace
}  // namespace plimsoll::testing
