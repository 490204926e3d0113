// Contract tests of TGI's routes over HTTP: /generate (single and list),
// details, /generate_stream framing, POST /, /health, /info, /tokenize, /metrics.
#include "api_fixture.h"

namespace plimsoll::testing {
namespace {

TEST_F(ApiTest, GenerateReturnsGeneratedText) {
  auto r = post("/generate", json{{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 5}}}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(body_json(r), json({{"generated_text", " hell"}}));
  EXPECT_EQ(r->get_header_value("x-generated-tokens"), "5");
  EXPECT_EQ(r->get_header_value("x-prompt-tokens"), "4");  // <s> ▁ h i
  auto items = service_.last_items();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].params.max_new_tokens, 5);
  EXPECT_FALSE(items[0].params.do_sample);
}

TEST_F(ApiTest, GenerateWithoutParametersSamplesWithTheDefaultLength) {
  auto r = post("/generate", json{{"inputs", "hi"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto items = service_.last_items();
  EXPECT_TRUE(items[0].params.do_sample);
  EXPECT_EQ(items[0].params.max_new_tokens, 5);  // ApiConfig::default_max_new_tokens in the fixture
}

TEST_F(ApiTest, GenerateDetailsMatchTgi) {
  json params = {{"max_new_tokens", 2}, {"details", true}, {"decoder_input_details", true},
                 {"top_n_tokens", 1}, {"return_full_text", true}, {"unknown_field", 1}};
  auto r = post("/generate", json{{"inputs", "hi"}, {"parameters", params}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json expected = json::parse(R"({
    "generated_text": "hi h",
    "details": {
      "finish_reason": "length", "generated_tokens": 2, "seed": null,
      "prefill": [{"id":1,"text":"","logprob":null},{"id":259,"text":"","logprob":-1.0},
                  {"id":267,"text":"h","logprob":-1.0},{"id":268,"text":"i","logprob":-1.0}],
      "tokens": [{"id":259,"text":" ","logprob":-0.25,"special":false},
                 {"id":267,"text":"h","logprob":-0.25,"special":false}],
      "top_tokens": [[{"id":259,"text":" ","logprob":-0.25,"special":false}],
                     [{"id":267,"text":"h","logprob":-0.25,"special":false}]]
    }})");
  EXPECT_EQ(body_json(r), expected) << r->body;
}

TEST_F(ApiTest, GenerateReportsTheSeedWhenSampling) {
  json params = {{"max_new_tokens", 1}, {"details", true}, {"do_sample", true}, {"seed", 7}};
  auto r = post("/generate", json{{"inputs", "hi"}, {"parameters", params}});
  ASSERT_TRUE(r);
  EXPECT_EQ(body_json(r)["details"]["seed"], 7);
}

TEST_F(ApiTest, ListInputsAreOneSubmissionAnsweredInOrder) {
  json body = {{"inputs", {"a", "bb", "ccc"}},
               {"parameters", {{"max_new_tokens", 1}, {"return_full_text", true}}}};
  auto r = post("/generate", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(body_json(r), json::parse(R"([{"generated_text":"a "},{"generated_text":"bb "},
                                           {"generated_text":"ccc "}])"));
  EXPECT_EQ(service_.last_items().size(), 3u);  // the fake finishes them in reverse order
}

TEST_F(ApiTest, GenerateStreamFramesTgiEvents) {
  json body = {{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 3}, {"details", true}}}};
  auto r = post("/generate_stream", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  auto events = sse_data(r->body, "data:");
  ASSERT_EQ(events.size(), 3u) << r->body;
  EXPECT_EQ(json::parse(events[0]), json::parse(R"({"index":1,
      "token":{"id":259,"text":" ","logprob":-0.25,"special":false},
      "generated_text":null,"details":null})"));
  EXPECT_EQ(json::parse(events[2]), json::parse(R"({"index":3,
      "token":{"id":264,"text":"e","logprob":-0.25,"special":false},
      "generated_text":" he",
      "details":{"finish_reason":"length","generated_tokens":3,"seed":null,"input_length":4}})"));
  EXPECT_TRUE(service_.cancelled().empty());  // a finished stream cancels nothing
}

TEST_F(ApiTest, CompatRouteGeneratesAListOrStreams) {
  // TGI's POST / defaults return_full_text to true (a model without a pipeline tag).
  auto r = post("/", json{{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 1}}}});
  ASSERT_TRUE(r);
  EXPECT_EQ(body_json(r), json::parse(R"([{"generated_text":"hi "}])"));
  r = post("/", json{{"inputs", "hi"}});
  EXPECT_EQ(body_json(r)[0]["generated_text"].get<std::string>().substr(0, 2), "hi");
  r = post("/", json{{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 1}, {"return_full_text", false}}}});
  EXPECT_EQ(body_json(r), json::parse(R"([{"generated_text":" "}])"));
  r = post("/generate", json{{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 1}}}});
  EXPECT_EQ(body_json(r), json::parse(R"({"generated_text":" "})"));  // /generate keeps false
  r = post("/", json{{"inputs", "hi"}, {"stream", true}, {"parameters", {{"max_new_tokens", 2}}}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  EXPECT_EQ(sse_data(r->body, "data:").size(), 2u);
}

TEST_F(ApiTest, HealthFollowsReadiness) {
  auto r = client_->Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  service_.ready_ = false;
  r = client_->Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(body_json(r), json::parse(R"({"error":"unhealthy","error_type":"healthcheck"})"));
}

TEST_F(ApiTest, InfoPublishesLimits) {
  auto r = client_->Get("/info");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  json info = body_json(r);
  EXPECT_EQ(info["model_id"], "fake/model");
  EXPECT_EQ(info["max_input_tokens"], 64);
  EXPECT_EQ(info["max_total_tokens"], 96);
  EXPECT_EQ(info["max_stop_sequences"], 4);
  EXPECT_EQ(info["max_best_of"], 1);
  EXPECT_EQ(info["router"], "plimsoll");
  EXPECT_TRUE(info["version"].is_string());
}

TEST_F(ApiTest, TokenizeReportsIdsTextAndOffsets) {
  auto r = post("/tokenize", json{{"inputs", "hi yo"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(body_json(r), json::parse(R"([
    {"id":1,"text":"","start":0,"stop":0},
    {"id":259,"text":"","start":0,"stop":0},
    {"id":267,"text":"h","start":0,"stop":1},
    {"id":268,"text":"i","start":1,"stop":2},
    {"id":259,"text":" ","start":2,"stop":3},
    {"id":284,"text":"y","start":3,"stop":4},
    {"id":274,"text":"o","start":4,"stop":5}])"));
}

TEST_F(ApiTest, MetricsCountRequestsAndMirrorServiceLoad) {
  ASSERT_TRUE(post("/generate", json{{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 2}}}}));
  ASSERT_TRUE(post("/generate", json{{"inputs", ""}}));
  auto r = client_->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string& m = r->body;
  EXPECT_NE(m.find("\ntgi_request_count 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\ntgi_request_success 1\n"), std::string::npos);
  EXPECT_NE(m.find("\ntgi_request_failure{err=\"validation\"} 1\n"), std::string::npos);
  EXPECT_NE(m.find("\ntgi_queue_size 3\n"), std::string::npos);
  EXPECT_NE(m.find("\nplimsoll_kv_blocks_used 7\n"), std::string::npos);
  // The inference extension's model-server protocol, from the same figures.
  EXPECT_NE(m.find("\n# TYPE plimsoll_num_requests_waiting gauge\nplimsoll_num_requests_waiting 3\n"),
            std::string::npos);
  EXPECT_NE(m.find("\n# TYPE plimsoll_num_requests_running gauge\nplimsoll_num_requests_running 2\n"),
            std::string::npos);
  EXPECT_NE(m.find("\n# TYPE plimsoll_kv_cache_usage_perc gauge\nplimsoll_kv_cache_usage_perc 0.25\n"),
            std::string::npos);
  EXPECT_NE(m.find("\nplimsoll_preemptions_total 2\n"), std::string::npos);
  EXPECT_NE(m.find("\ntgi_request_generated_tokens_count 1\n"), std::string::npos);
  EXPECT_NE(m.find("\nplimsoll_inter_token_latency_seconds_count 1\n"), std::string::npos);
  EXPECT_NE(m.find("\nplimsoll_time_to_first_token_seconds_count 1\n"), std::string::npos);
}

TEST_F(ApiTest, ByteTokensNeverBreakJson) {
  service_.script_ids_ = {tokenizer_.byte_token(0xC3)};  // half of "é", alone
  json body = {{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 1}, {"details", true}}}};
  auto r = post("/generate", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json b = body_json(r);
  EXPECT_EQ(b["generated_text"], "\xEF\xBF\xBD");
  EXPECT_EQ(b["details"]["tokens"][0]["text"], "\xEF\xBF\xBD");
  r = post("/generate_stream", body);
  ASSERT_TRUE(r);
  auto events = sse_data(r->body, "data:");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(json::parse(events[0])["token"]["text"], "\xEF\xBF\xBD");
}

TEST_F(ApiTest, StreamTokenTextIsEmptyUntilTheCharacterIsComplete) {
  service_.script_ids_ = {tokenizer_.byte_token(0xC3), tokenizer_.byte_token(0xA9), 259};  // "é", " "
  json body = {{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 3}, {"details", true}}}};
  auto events = sse_data(post("/generate_stream", body)->body, "data:");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(json::parse(events[0])["token"]["text"], "");  // TGI: "" for the first byte...
  EXPECT_EQ(json::parse(events[1])["token"]["text"], "\xC3\xA9");  // ...then the whole character
  EXPECT_EQ(json::parse(events[2])["generated_text"], "\xC3\xA9 ");
  json details = body_json(post("/generate", body))["details"];
  EXPECT_EQ(details["tokens"][0]["text"], "");
  EXPECT_EQ(details["tokens"][1]["text"], "\xC3\xA9");
}

TEST_F(ApiTest, BestOfAnswersTheBestWithTheOthersAsBestOfSequences) {
  service_.limits_.max_best_of = 3;
  json params = {{"max_new_tokens", 2}, {"best_of", 3}, {"do_sample", true}, {"details", true}};
  auto r = post("/generate", json{{"inputs", {"hi", "yo"}}, {"parameters", params}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(service_.last_items().size(), 6u);  // inputs x best_of
  json out = body_json(r);
  ASSERT_EQ(out.size(), 2u);
  for (const json& answer : out) {
    EXPECT_EQ(answer["generated_text"], " h");
    const json& others = answer["details"]["best_of_sequences"];
    ASSERT_EQ(others.size(), 2u) << r->body;
    EXPECT_EQ(others[0]["generated_text"], " h");
    EXPECT_EQ(others[0]["generated_tokens"], 2);
    EXPECT_EQ(others[0]["finish_reason"], "length");
    EXPECT_EQ(others[0]["tokens"].size(), 2u);
    EXPECT_TRUE(others[0].contains("seed"));
  }
  // Without details there is no details object at all (TGI).
  params.erase("details");
  EXPECT_EQ(body_json(post("/generate", json{{"inputs", "hi"}, {"parameters", params}})),
            json::parse(R"({"generated_text":" h"})"));
  expect_error(post("/generate", json{{"inputs", "hi"}, {"parameters", {{"best_of", 2}}}}), 422, "validation",
               "you must use sampling when `best_of` is > 1");
  expect_error(post("/generate", json{{"inputs", "hi"}, {"parameters", {{"best_of", 2}, {"do_sample", true}, {"seed", 1}}}}),
               422, "validation", "`seed` must not be set when `best_of` > 1");
  expect_error(post("/generate_stream", json{{"inputs", "hi"}, {"parameters", {{"best_of", 2}, {"do_sample", true}}}}),
               422, "validation", "`best_of` != 1 is not allowed for this endpoint");
}

}  // namespace
}  // namespace plimsoll::testing
