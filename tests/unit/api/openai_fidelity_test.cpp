// What real OpenAI clients send and expect: stop sequences left out of the
// text (held back while streaming), token-id prompts, echo with prompt
// logprobs, logit_bias, vLLM's sampling extensions, int64 seeds, best_of,
// usage: null on chunks, chat without max_tokens, /v1/models/{id}, OpenAI's
// error object on every /v1 path, and the opt-in CORS flag.
#include "api_fixture.h"

namespace plimsoll::testing {
namespace {

// The FakeService generates " hello world" token by token (one per character).

std::string stream_text(const std::vector<std::string>& events, const char* field) {
  std::string text;
  for (const std::string& e : events) {
    if (e == "[DONE]") continue;
    json chunk = json::parse(e);
    for (const json& c : chunk["choices"]) text += field[0] == 'd' ? c["delta"]["content"].get<std::string>()
                                                                   : c["text"].get<std::string>();
  }
  return text;
}

TEST_F(ApiTest, StopSequencesAreLeftOutOfTheText) {
  auto r = post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 10}, {"stop", "lo"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json choice = body_json(r)["choices"][0];
  EXPECT_EQ(choice["text"], " hel");
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_EQ(body_json(r)["usage"]["completion_tokens"], 6);
  r = post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 10}, {"stop", "lo"}, {"include_stop_str_in_output", true}});
  EXPECT_EQ(body_json(r)["choices"][0]["text"], " hello");
  r = post("/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"stop", {"wor", "o w"}}});
  EXPECT_EQ(body_json(r)["choices"][0]["message"]["content"], " hell");  // the first match wins
}

TEST_F(ApiTest, StreamedStopSequencesAreHeldBackUntilTheyCannotMatch) {
  // "llo w" matches: its prefix "l", "ll", "llo", "llo " must never be sent.
  auto r = post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 10}, {"stop", "llo w"}, {"stream", true}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto events = sse_data(r->body, "data: ");
  EXPECT_EQ(stream_text(events, "text"), " he");
  EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "stop");
  // "lx" never matches: a held "l" goes out once the next text rules it out
  // (the second "l" may still open "lx", the "o" after it may not).
  r = post("/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 8},
                                        {"stop", "lx"}, {"stream", true}});
  events = sse_data(r->body, "data: ");
  std::vector<std::string> pieces;
  for (const std::string& e : events) {
    if (e != "[DONE]") pieces.push_back(json::parse(e)["choices"][0]["delta"]["content"]);
  }
  EXPECT_EQ(pieces, (std::vector<std::string>{" ", "h", "e", "l", "lo", " ", "w"}));
}

TEST_F(ApiTest, StreamChunksCarryUsageNullWhenUsageIsAskedFor) {
  json body = {{"prompt", "hi"}, {"max_tokens", 2}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
  auto events = sse_data(post("/v1/completions", body)->body, "data: ");
  ASSERT_EQ(events.size(), 4u);
  for (size_t i = 0; i < 2; ++i) {
    json chunk = json::parse(events[i]);
    ASSERT_TRUE(chunk.contains("usage")) << events[i];
    EXPECT_TRUE(chunk["usage"].is_null());
  }
  EXPECT_EQ(json::parse(events[2])["usage"]["total_tokens"], 6);
  body.erase("stream_options");
  events = sse_data(post("/v1/completions", body)->body, "data: ");
  EXPECT_FALSE(json::parse(events[0]).contains("usage"));
}

TEST_F(ApiTest, TokenIdPromptsSingleAndLists) {
  auto r = post("/v1/completions", json{{"prompt", {1, 285, 285}}, {"max_tokens", 1}, {"echo", true}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(service_.last_items()[0].prompt_ids, (std::vector<int32_t>{1, 285, 285}));  // as given, no BOS added
  EXPECT_EQ(body_json(r)["choices"][0]["text"], "zz ");                              // echo: the ids' text
  EXPECT_EQ(body_json(r)["usage"]["prompt_tokens"], 3);
  r = post("/v1/completions", json{{"prompt", {{262, 263}, {264}}}, {"max_tokens", 1}, {"n", 2}});
  ASSERT_EQ(r->status, 200) << r->body;
  auto items = service_.last_items();
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[1].prompt_ids, (std::vector<int32_t>{262, 263}));
  EXPECT_EQ(items[2].prompt_ids, (std::vector<int32_t>{264}));
  const std::string bad = "invalid_request_error";
  expect_openai_error(post("/v1/completions", json{{"prompt", {5, 100000}}}), 400, bad,
                      "`prompt` holds token id 100000, outside the vocabulary (0 to 285)", "prompt");
  expect_openai_error(post("/v1/completions", json{{"prompt", {5, -1}}}), 400, bad, "token id -1", "prompt");
  expect_openai_error(post("/v1/completions", json{{"prompt", {{5}, json::array()}}}), 400, bad,
                      "`prompt` token lists cannot be empty", "prompt");
  expect_openai_error(post("/v1/completions", json{{"prompt", {5, "a"}}}), 400, bad, "`prompt` must be", "prompt");
  expect_openai_error(post("/v1/completions", json{{"prompt", std::vector<int>(65, 5)}}), 400, bad,
                      "`prompt` must have less than 64 tokens. Given: 65", "prompt");
}

TEST_F(ApiTest, EchoWithLogprobsReturnsThePromptsLogprobs) {
  auto r = post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 1}, {"echo", true}, {"logprobs", 1}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const sched::GenerationRequest item = service_.last_items()[0];
  EXPECT_TRUE(item.prompt_details);
  EXPECT_EQ(item.prompt_top_n, 1);
  EXPECT_TRUE(item.raw_logprobs);  // the model's own distribution, as vLLM reports
  json choice = body_json(r)["choices"][0];
  EXPECT_EQ(choice["text"], "hi ");
  // lm-evaluation-harness reads token_logprobs[ctxlen:-1] and top_logprobs' max:
  // the 4 prompt tokens (<s>, the dummy space, h, i; the first without a
  // logprob), then the generated one.
  const json& lp = choice["logprobs"];
  EXPECT_EQ(lp["token_logprobs"], json::parse("[null,-1.0,-1.0,-1.0,-0.25]")) << r->body;
  ASSERT_EQ(lp["top_logprobs"].size(), 5u);
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["top_logprobs"][3], json::parse(R"({"i":-1.0})"));
  EXPECT_EQ(lp["top_logprobs"][4], json::parse(R"({" ":-0.25})"));
  EXPECT_EQ(lp["tokens"][2], "h");
  EXPECT_EQ(lp["tokens"][4], " ");
  ASSERT_EQ(lp["text_offset"].size(), 5u);
  EXPECT_EQ(lp["text_offset"][0], 0);
  for (size_t i = 1; i < 5; ++i) EXPECT_GE(lp["text_offset"][i], lp["text_offset"][i - 1]);
  // Streaming: the first chunk has the prompt, its logprobs and the first token.
  r = post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 2}, {"echo", true}, {"logprobs", 0}, {"stream", true}});
  auto events = sse_data(r->body, "data: ");
  json first = json::parse(events[0])["choices"][0];
  EXPECT_EQ(first["text"], "hi ");
  EXPECT_EQ(first["logprobs"]["token_logprobs"], json::parse("[null,-1.0,-1.0,-1.0,-0.25]"));
  EXPECT_EQ(json::parse(events[1])["choices"][0]["logprobs"]["text_offset"], json::parse("[3]"));
}

TEST_F(ApiTest, LogitBiasReachesTheSamplerAndIsChecked) {
  auto r = post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 1}, {"n", 2}, {"logit_bias", {{"285", 5}, {"3", -100}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto items = service_.last_items();
  ASSERT_EQ(items[0].params.logit_bias.size(), 2u);
  EXPECT_EQ(items[0].params.logit_bias.identity(), items[1].params.logit_bias.identity());  // shared, charged once
  auto entries = items[0].params.logit_bias.entries();
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<LogitBias::Entry>{{3, -100.0f}, {285, 5.0f}}));
  const std::string bad = "invalid_request_error";
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"logit_bias", {{"abc", 1}}}}), 400, bad,
                      "`logit_bias` keys must be token ids of the vocabulary (0 to 285)", "logit_bias");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"logit_bias", {{"286", 1}}}}), 400, bad,
                      "Given: \"286\"", "logit_bias");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"logit_bias", {{"5", 101}}}}), 400, bad,
                      "`logit_bias` values must be numbers >= -100 and <= 100", "logit_bias");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"logit_bias", {1, 2}}}), 400, bad,
                      "`logit_bias` must be an object", "logit_bias");
}

TEST_F(ApiTest, SeedsAreAnyInt64AndExtensionsReachTheSampler) {
  auto params = [&](const json& extra) {
    json body = {{"prompt", "hi"}, {"max_tokens", 1}};
    body.update(extra);
    auto r = post("/v1/completions", body);
    EXPECT_EQ(r->status, 200) << r->body;
    return service_.last_items()[0].params;
  };
  EXPECT_EQ(*params({{"seed", -1}}).seed, UINT64_MAX);
  EXPECT_EQ(*params({{"seed", INT64_MIN}}).seed, uint64_t{1} << 63);
  EXPECT_EQ(*params({{"seed", 7}}).seed, 7u);
  SamplingParams p = params({{"top_k", 5}, {"min_p", 0.1}, {"repetition_penalty", 1.2}});
  EXPECT_EQ(p.top_k, 5);
  EXPECT_FLOAT_EQ(p.min_p, 0.1f);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.2f);
  EXPECT_EQ(params({{"top_k", -1}}).top_k, 0);  // vLLM's "off"
  p = params({{"temperature", 0}, {"top_k", 5}, {"top_p", 0.5}, {"min_p", 0.2}, {"repetition_penalty", 1.3}});
  EXPECT_FALSE(p.samples());  // greedy: warpers do not apply; the penalty does
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.3f);
  const std::string bad = "invalid_request_error";
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"seed", 1.5}}), 400, bad,
                      "`seed` must be an integer, got number", "seed");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"top_k", -2}}), 400, bad, "`top_k`", "top_k");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"min_p", 1.5}}), 400, bad, "`min_p`", "min_p");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"repetition_penalty", 0}}), 400, bad,
                      "`repetition_penalty` must be strictly positive", "repetition_penalty");
}

TEST_F(ApiTest, BestOfAnswersTheNItemsOfHighestMeanLogprob) {
  // The fake's logprob per token depends on the seed: seeds 0, 1, 2 give -0.55, -0.65, -0.25.
  auto r = post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 2}, {"best_of", 3}, {"seed", 0}, {"logprobs", 0}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(service_.last_items().size(), 3u);
  json out = body_json(r);
  ASSERT_EQ(out["choices"].size(), 1u);
  EXPECT_EQ(out["choices"][0]["index"], 0);
  EXPECT_EQ(out["choices"][0]["logprobs"]["token_logprobs"], json::parse("[-0.25,-0.25]"));
  EXPECT_EQ(out["usage"]["completion_tokens"], 6);  // every item generated is counted
  r = post("/v1/completions", json{{"prompt", {"a", "b"}}, {"max_tokens", 1}, {"best_of", 3}, {"n", 2}, {"seed", 0}, {"logprobs", 0}});
  out = body_json(r);
  ASSERT_EQ(out["choices"].size(), 4u);
  EXPECT_FLOAT_EQ(out["choices"][0]["logprobs"]["token_logprobs"][0].get<float>(), -0.25f);
  EXPECT_FLOAT_EQ(out["choices"][1]["logprobs"]["token_logprobs"][0].get<float>(), -0.55f);
  EXPECT_EQ(out["choices"][2]["text"], " ");
  EXPECT_EQ(out["choices"][3]["index"], 3);
}

TEST_F(ApiTest, ChatWithoutMaxTokensRunsToTheContext) {
  auto r = post("/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const sched::GenerationRequest item = service_.last_items()[0];
  EXPECT_EQ(item.params.max_new_tokens, 96 - static_cast<int64_t>(item.prompt_ids.size()));  // max_total_tokens 96
  post("/v1/completions", json{{"prompt", "hi"}});
  EXPECT_EQ(service_.last_items()[0].params.max_new_tokens, 16);  // completions keep OpenAI's 16
}

TEST_F(ApiTest, ModelsRetrieveByIdOr404InOpenAisShape) {
  for (const char* path : {"/v1/models/fake/model", "/v1/models/fake%2Fmodel"}) {
    auto r = client_->Get(path);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << path << r->body;
    EXPECT_EQ(body_json(r), json::parse(R"({"id":"fake/model","object":"model","created":0,"owned_by":"plimsoll"})"));
  }
  auto r = client_->Get("/v1/models/gpt-4");
  expect_openai_error(r, 404, "invalid_request_error", "The model `gpt-4` does not exist");
  EXPECT_EQ(body_json(r)["error"]["code"], "model_not_found");
}

TEST_F(ApiTest, TransportErrorsOnV1PathsAreOpenAiShaped) {
  expect_openai_error(client_->Get("/v1/nothing"), 404, "invalid_request_error", "no route GET /v1/nothing");
  expect_error(client_->Get("/nothing"), 404, "not_found", "no route");  // TGI's shape elsewhere
  restart([](api::ApiConfig& c) { c.api_key = "s3cret"; });
  auto r = post("/v1/completions", json{{"prompt", "hi"}});
  expect_openai_error(r, 401, "invalid_request_error", "Authorization");
  EXPECT_EQ(body_json(r)["error"]["code"], "invalid_api_key");
}

TEST_F(ApiTest, MidStreamErrorIsOpenAisErrorObjectThenDone) {
  service_.fail_with_ = make_error(ErrorCode::kInternal, "engine fault: boom");
  auto r = post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 2}, {"stream", true}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto events = sse_data(r->body, "data: ");
  ASSERT_GE(events.size(), 2u);
  json error = json::parse(events[events.size() - 2]);
  EXPECT_EQ(error["error"]["message"], "engine fault: boom");
  EXPECT_EQ(error["error"]["type"], "server_error");
  EXPECT_EQ(events.back(), "[DONE]");
}

TEST_F(ApiTest, CorsIsOffUnlessAllowedOrigins) {
  httplib::Headers origin = {{"Origin", "https://app.example"}};
  auto r = client_->Get("/v1/models", origin);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
  EXPECT_EQ(client_->Options("/v1/completions", origin)->status, 404);
  restart([](api::ApiConfig& c) {
    c.cors_allow_origin = "https://other.example, https://app.example";
    c.api_key = "s3cret";
  });
  httplib::Headers preflight = {{"Origin", "https://app.example"}, {"Access-Control-Request-Method", "POST"},
                                {"Access-Control-Request-Headers", "authorization,content-type"}};
  r = client_->Options("/v1/chat/completions", preflight);  // no key needed: browsers send none
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Methods"), "GET, POST, OPTIONS");
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Headers"), "authorization,content-type");
  EXPECT_FALSE(r->has_header("Content-Length"));  // a 204 has none
  r = post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 1}}.dump(),
           {{"Origin", "https://app.example"}, {"Authorization", "Bearer s3cret"}});
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_EQ(r->get_header_value("Vary"), "Origin");
  r = client_->Get("/v1/models", httplib::Headers{{"Origin", "https://evil.example"}});
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
}

// Tools on the fake model (no template: the generic format). The scripted
// answer is a call: the stream sends its id and name once the name is
// written, then the arguments as their text grows, then "tool_calls". A
// scripted reply is sent as content as its string is decoded.
TEST_F(ApiTest, StreamedGenericToolCallsAndRepliesComeAsGenerated) {
  const json tool = {{"type", "function"},
                     {"function", {{"name", "f"}, {"parameters", {{"type", "object"}, {"properties", {{"a", {{"type", "string"}}}}}}}}}};
  const json hi = {{{"role", "user"}, {"content", "hi"}}};
  const std::string call = R"({"tool_calls": [{"name": "f", "parameters": {"a": "xyz"}}]})";
  service_.limits_.max_input_tokens = 400;  // the tools' description is in the prompt
  service_.limits_.max_total_tokens = 512;
  service_.script_ids_ = tokenizer_.encode(call, false);
  auto r = post("/v1/chat/completions", json{{"messages", hi}, {"tools", json::array({tool})}, {"stream", true},
                                             {"max_tokens", static_cast<int64_t>(service_.script_ids_.size())}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::vector<std::string> args;
  std::string id;
  std::string finish;
  for (const std::string& e : sse_data(r->body, "data: ")) {
    if (e == "[DONE]") continue;
    const json choice = json::parse(e)["choices"][0];
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
    if (!choice["delta"].contains("tool_calls")) continue;
    const json& d = choice["delta"]["tool_calls"][0];
    EXPECT_EQ(d["index"], 0);
    if (d.contains("id")) {
      EXPECT_TRUE(id.empty()) << "a second head";
      id = d["id"];
      EXPECT_EQ(d["function"]["name"], "f");
      EXPECT_EQ(choice["delta"]["role"], "assistant");
      EXPECT_TRUE(choice["delta"]["content"].is_null());
    }
    const std::string piece = d["function"].value("arguments", "");
    if (!piece.empty()) {
      EXPECT_FALSE(id.empty()) << "arguments before the name";
      args.push_back(piece);
    }
  }
  EXPECT_EQ(id.rfind("call_", 0), 0u);
  EXPECT_GT(args.size(), 1u);
  std::string joined;
  for (const std::string& a : args) joined += a;
  EXPECT_EQ(joined, R"({"a": "xyz"})");
  EXPECT_EQ(finish, "tool_calls");

  service_.script_ids_ = tokenizer_.encode(R"({"response": "he said \"hi\""})", false);
  r = post("/v1/chat/completions", json{{"messages", hi}, {"tools", json::array({tool})}, {"stream", true},
                                        {"max_tokens", static_cast<int64_t>(service_.script_ids_.size())}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const auto events = sse_data(r->body, "data: ");
  size_t pieces = 0;
  for (const std::string& e : events) {
    if (e != "[DONE]" && !json::parse(e)["choices"][0]["delta"].value("content", std::string()).empty()) ++pieces;
  }
  EXPECT_EQ(stream_text(events, "delta"), "he said \"hi\"");
  EXPECT_GT(pieces, 1u);
}

// parallel_tool_calls false: an answer carries its first call only, whole or
// streamed (whatever the model wrote after it).
TEST_F(ApiTest, ParallelToolCallsFalseKeepsTheFirstCall) {
  const json tool = {{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {{"type", "object"}}}}}};
  service_.limits_.max_input_tokens = 400;
  service_.limits_.max_total_tokens = 512;
  service_.script_ids_ = tokenizer_.encode(R"({"tool_calls": [{"name": "f", "parameters": {}}, {"name": "f", "parameters": {}}]})", false);
  for (bool parallel : {true, false}) {
    for (bool stream : {false, true}) {
      auto r = post("/v1/chat/completions",
                    json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"tools", json::array({tool})},
                         {"parallel_tool_calls", parallel}, {"stream", stream},
                         {"max_tokens", static_cast<int64_t>(service_.script_ids_.size())}});
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200) << r->body;
      size_t calls = 0;
      if (!stream) {
        calls = json::parse(r->body)["choices"][0]["message"]["tool_calls"].size();
      } else {
        for (const std::string& e : sse_data(r->body, "data: ")) {
          if (e == "[DONE]") continue;
          const json delta = json::parse(e)["choices"][0]["delta"];
          if (delta.contains("tool_calls") && delta["tool_calls"][0].contains("id")) ++calls;
        }
      }
      EXPECT_EQ(calls, parallel ? 2u : 1u) << "parallel " << parallel << " stream " << stream;
    }
  }
}

}  // namespace
}  // namespace plimsoll::testing
