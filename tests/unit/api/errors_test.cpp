// Every error path over HTTP: malformed JSON, wrong types, out-of-range
// parameters, limits, rejections (429 + Retry-After, 503), auth, 413, 404.
#include "api_fixture.h"

#include "api/errors.h"

namespace plimsoll::testing {
namespace {

json with_params(json params) { return {{"inputs", "hi"}, {"parameters", std::move(params)}}; }

TEST_F(ApiTest, MalformedJsonIs422WithTheParseError) {
  expect_error(post("/generate", std::string("{\"inputs\": ")), 422, "validation", "parse error");
  expect_openai_error(post("/v1/completions", std::string("not json")), 400, "invalid_request_error", "parse error");
}

TEST_F(ApiTest, WrongTypesNameTheField) {
  expect_error(post("/generate", json{{"inputs", 5}}), 422, "validation",
               "`inputs` must be a string or a list of strings, got integer");
  expect_error(post("/generate", with_params({{"max_new_tokens", "5"}})), 422, "validation",
               "`max_new_tokens` must be an integer, got string");
  expect_error(post("/generate", with_params({{"temperature", true}})), 422, "validation",
               "`temperature` must be a number, got boolean");
  expect_error(post("/generate", with_params({{"stop", "x"}})), 422, "validation",
               "`stop` must be a list of strings");
  expect_error(post("/generate", with_params({{"seed", -1}})), 422, "validation",
               "`seed` must be a non-negative integer");
  expect_error(post("/generate", json{{"inputs", "hi"}, {"parameters", 3}}), 422, "validation",
               "`parameters` must be an object");
  expect_error(post("/generate", json::array()), 422, "validation", "must be a JSON object");
  expect_error(post("/generate", json::object()), 422, "validation", "`inputs` is required");
}

TEST_F(ApiTest, OutOfRangeParametersUseTgiMessages) {
  expect_error(post("/generate", with_params({{"temperature", 0}})), 422, "validation",
               "`temperature` must be strictly positive");
  expect_error(post("/generate", with_params({{"top_p", 1.0}})), 422, "validation",
               "`top_p` must be > 0.0 and < 1.0");
  expect_error(post("/generate", with_params({{"top_k", -3}})), 422, "validation",
               "`top_k` must be strictly positive");
  expect_error(post("/generate", with_params({{"typical_p", 0}})), 422, "validation",
               "`typical_p` must be > 0.0 and < 1.0");
  expect_error(post("/generate", with_params({{"repetition_penalty", -1}})), 422, "validation",
               "`repetition_penalty` must be strictly positive");
  expect_error(post("/generate", with_params({{"frequency_penalty", 3}})), 422, "validation",
               "`frequency_penalty` must be >= -2.0 and <= 2.0");
  expect_error(post("/generate", with_params({{"max_new_tokens", 0}})), 422, "validation",
               "`max_new_tokens` must be strictly positive");
  expect_error(post("/generate", with_params({{"top_n_tokens", 6}})), 422, "validation",
               "`top_n_tokens` must be >= 0 and <= 5. Given: 6");
  expect_error(post("/generate", with_params({{"best_of", 2}})), 422, "validation",
               "`best_of` must be > 0 and <= 1. Given: 2");
  expect_error(post("/generate", with_params({{"truncate", 0}})), 422, "validation",
               "`truncate` must be strictly positive and less than 64. Given: 0");
  expect_error(post("/generate_stream", with_params({{"decoder_input_details", true}})), 422,
               "validation", "`decoder_input_details` == true is not supported when streaming");
}

TEST_F(ApiTest, TokenLimitsAreChecked) {
  expect_error(post("/generate", with_params({{"max_new_tokens", 1000000000000LL}})), 422,
               "validation",
               "`inputs` tokens + `max_new_tokens` must be <= 96. Given: 4 `inputs` tokens and "
               "1000000000000 `max_new_tokens`");
  // Counted after tokenizing when the text could fit...
  expect_error(post("/generate", json{{"inputs", std::string(63, 'a')}}), 422, "validation",
               "`inputs` must have less than 64 tokens. Given: 65");
  // ...refused by its length in bytes, before tokenizing, when it cannot
  // (every token of this vocabulary stands for at most 1 byte).
  expect_error(post("/generate", json{{"inputs", std::string(70, 'a')}}), 422, "validation",
               "`inputs` must have less than 64 tokens. Given: at least 70 (70 bytes)");
  expect_error(post("/generate", json{{"inputs", ""}}), 422, "validation", "`inputs` cannot be empty");
}

TEST_F(ApiTest, TruncateKeepsTheLastTokens) {
  std::string long_input(70, 'a');
  auto r = post("/generate", json{{"inputs", long_input}, {"parameters", {{"truncate", 10}, {"max_new_tokens", 1}}}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(service_.last_items()[0].prompt_ids.size(), 10u);
}

TEST_F(ApiTest, TooManyStopSequences) {
  expect_error(post("/generate", with_params({{"stop", {"a", "b", "c", "d", "e"}}})), 422,
               "validation", "`stop` supports up to 4 stop sequences. Given: 5");
  expect_openai_error(post("/v1/completions", json{{"prompt", "hi"}, {"stop", {"a", "b", "c", "d", "e"}}}),
                      400, "invalid_request_error", "`stop` supports up to 4 stop sequences. Given: 5", "stop");
}

TEST_F(ApiTest, ClientBatchLimitApplies) {
  service_.limits_.max_client_batch_size = 2;
  expect_error(post("/generate", json{{"inputs", {"a", "b", "c"}}}), 422, "validation",
               "at most 2 per request");
}

TEST_F(ApiTest, OverloadedIs429WithRetryAfterBeforeAnyStreamByte) {
  service_.reject_ = sched::Rejection{make_error(ErrorCode::kOverloaded, "queue full (128 requests)"), 2.2};
  auto r = post("/generate_stream", with_params({{"max_new_tokens", 2}}));
  expect_error(r, 429, "overloaded", "queue full");
  EXPECT_EQ(r->get_header_value("Retry-After"), "3");
  service_.reject_->retry_after_seconds = 0.01;
  r = post("/generate", with_params({{"max_new_tokens", 2}}));
  expect_error(r, 429, "overloaded", "queue full");
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  r = post("/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"stream", true}});
  expect_openai_error(r, 429, "rate_limit_exceeded", "queue full");
  EXPECT_EQ(body_json(r)["error"]["code"], "rate_limit_exceeded");
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  auto m = client_->Get("/metrics");
  EXPECT_NE(m->body.find("plimsoll_rejections_total{reason=\"overloaded\"} 3"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("tgi_request_failure{err=\"overloaded\"} 3"), std::string::npos);
}

TEST_F(ApiTest, MemoryPressureIs429CountedUnderItsOwnReasonWhileHealthStays200) {
  service_.reject_ = sched::Rejection{make_error(ErrorCode::kOverloaded, "Memory pressure: usage is 301.00 MiB"), 1.0,
                                      "memory_pressure"};
  auto r = post("/generate", with_params({{"max_new_tokens", 2}}));
  expect_error(r, 429, "overloaded", "Memory pressure: usage is 301.00 MiB");
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_EQ(client_->Get("/health")->status, 200);  // alive: only new work is refused
  auto m = client_->Get("/metrics");
  EXPECT_NE(m->body.find("plimsoll_rejections_total{reason=\"memory_pressure\"} 1"), std::string::npos) << m->body;
  EXPECT_EQ(m->body.find("plimsoll_rejections_total{reason=\"overloaded\"}"), std::string::npos);
}

TEST_F(ApiTest, RejectionTableMapsCodes) {
  service_.reject_ = sched::Rejection{make_error(ErrorCode::kUnavailable, "shutting down"), 0};
  expect_error(post("/generate", with_params({})), 503, "unavailable", "shutting down");
  service_.reject_ = sched::Rejection{make_error(ErrorCode::kOutOfMemory, "needs 9 blocks, pool has 4"), 0};
  expect_error(post("/generate", with_params({})), 422, "validation", "needs 9 blocks");
}

TEST_F(ApiTest, EngineFaultIs500JsonOrTheStreamsLastEvent) {
  service_.fail_with_ = make_error(ErrorCode::kInternal, "kernel exploded");
  expect_error(post("/generate", with_params({{"max_new_tokens", 2}})), 500, "internal", "kernel exploded");
  auto r = post("/generate_stream", with_params({{"max_new_tokens", 2}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);  // the stream had started: the error is its last event
  auto events = sse_data(r->body, "data:");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(json::parse(events[1]), json::parse(R"({"error":"kernel exploded","error_type":"internal"})"));
}

TEST(ErrorTable, StatusesAndTypes) {
  auto check = [](ErrorCode code, int status, const char* type) {
    api::ApiError e = api::api_error(make_error(code, "m"));
    EXPECT_EQ(e.status, status) << error_code_name(code);
    EXPECT_EQ(e.error_type, type) << error_code_name(code);
  };
  check(ErrorCode::kInvalidArgument, 422, "validation");
  check(ErrorCode::kOutOfMemory, 422, "validation");
  check(ErrorCode::kUnsupported, 422, "validation");
  check(ErrorCode::kOverloaded, 429, "overloaded");
  check(ErrorCode::kUnavailable, 503, "unavailable");
  check(ErrorCode::kCancelled, 500, "incomplete_generation");
  check(ErrorCode::kInternal, 500, "internal");
  check(ErrorCode::kIo, 424, "generation");
}

TEST_F(ApiTest, ApiKeyGuardsGenerationRoutes) {
  restart([](api::ApiConfig& c) { c.api_key = "s3cret"; });
  expect_error(post("/generate", with_params({{"max_new_tokens", 1}})), 401, "unauthorized", "Bearer");
  expect_error(post("/generate", with_params({{"max_new_tokens", 1}}).dump(), {{"Authorization", "Bearer wrong"}}),
               401, "unauthorized", "Bearer");
  auto r = post("/generate", with_params({{"max_new_tokens", 1}}).dump(), {{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(client_->Get("/health")->status, 200);  // as TGI: health, info, metrics stay open
  EXPECT_EQ(client_->Get("/metrics")->status, 200);
}

TEST_F(ApiTest, OversizedPayloadIs413) {
  restart([](api::ApiConfig& c) { c.payload_limit_bytes = 1024; });
  std::string big(4096, 'a');
  expect_error(post("/generate", json{{"inputs", big}}), 413, "validation", "1024 bytes");
}

TEST_F(ApiTest, UnknownRouteIs404Json) {
  auto r = client_->Get("/nope");
  expect_error(r, 404, "not_found", "/nope");
}

}  // namespace
}  // namespace plimsoll::testing
