// Wire formats: request bodies, error bodies (TGI and OpenAI) -> typed
// errors with Retry-After, answers, /info, and SSE framing across any split.
#include <gtest/gtest.h>

#include "client/sse.h"
#include "client/wire.h"

namespace plimsoll::client {
namespace {

using nlohmann::json;
using wire::HttpReply;

TEST(Wire, GenerateBodyListOrStringWithParameters) {
  GenerateParams p;
  p.max_new_tokens = 8;
  p.extra = {{"top_n_tokens", 2}, {"max_new_tokens", 9}};
  json one = json::parse(wire::generate_body({"a"}, false, p));
  EXPECT_EQ(one["inputs"], "a");
  EXPECT_EQ(one["parameters"]["max_new_tokens"], 9);  // extra wins
  EXPECT_EQ(one["parameters"]["top_n_tokens"], 2);
  json list = json::parse(wire::generate_body({"a", "b"}, true, GenerateParams{}));
  EXPECT_EQ(list["inputs"], json({"a", "b"}));
  EXPECT_FALSE(list.contains("parameters"));
}

TEST(Wire, StatusAndErrorTypeGiveTheKind) {
  struct Case { int status; ErrorKind kind; };
  for (Case c : {Case{422, ErrorKind::kValidation}, Case{429, ErrorKind::kOverloaded}, Case{503, ErrorKind::kUnavailable},
                 Case{424, ErrorKind::kGeneration}, Case{404, ErrorKind::kHttp}, Case{413, ErrorKind::kValidation}}) {
    ClientError e = wire::error_from_reply(HttpReply{c.status, R"({"error":"nope","error_type":"x"})", "", ""});
    EXPECT_EQ(e.kind, c.kind) << c.status;
    EXPECT_EQ(e.message, "nope");
    EXPECT_EQ(e.http_status, c.status);
  }
}

TEST(Wire, RetryAfterSecondsAndOpenAiErrorBodies) {
  ClientError e = wire::error_from_reply(HttpReply{429, R"({"error":"queue full","error_type":"overloaded"})", "2", ""});
  EXPECT_EQ(e.retry_after_seconds, 2);
  EXPECT_EQ(e.error_type, "overloaded");
  EXPECT_NE(e.describe().find("retry after 2 s"), std::string::npos) << e.describe();
  e = wire::error_from_reply(HttpReply{400, R"({"error":{"message":"bad","type":"invalid_request_error"}})", "", ""});
  EXPECT_EQ(e.kind, ErrorKind::kValidation);
  EXPECT_EQ(e.message, "bad");
  e = wire::error_from_reply(HttpReply{502, "<html>bad gateway</html>", "Wed, 21 Oct 2015 07:28:00 GMT", ""});
  EXPECT_EQ(e.kind, ErrorKind::kUnavailable);
  EXPECT_EQ(e.retry_after_seconds, 0);
  EXPECT_NE(e.message.find("bad gateway"), std::string::npos);
}

TEST(Wire, AnswersAndProtocolErrors) {
  auto list = wire::parse_generate(HttpReply{200, R"([{"generated_text":"x"},{"generated_text":"y"}])", "", "7"}, 2, true);
  ASSERT_TRUE(list.ok()) << list.error().describe();
  EXPECT_EQ(list->items[1].text, "y");
  EXPECT_EQ(list->generated_tokens, 7);
  auto short_list = wire::parse_generate(HttpReply{200, R"([{"generated_text":"x"}])", "", ""}, 2, true);
  ASSERT_FALSE(short_list.ok());
  EXPECT_EQ(short_list.error().kind, ErrorKind::kProtocol);
  auto bad = wire::parse_generate(HttpReply{200, "not json", "", ""}, 1, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::kProtocol);
  auto wrong_shape = wire::parse_generate(HttpReply{200, R"({"text":"x"})", "", ""}, 1, false);
  ASSERT_FALSE(wrong_shape.ok());
  EXPECT_EQ(wrong_shape.error().kind, ErrorKind::kProtocol);
  auto completions = wire::parse_completions(
      HttpReply{200, R"({"choices":[{"index":1,"text":"b"},{"index":0,"text":"a"}],"usage":{"completion_tokens":4}})", "", ""}, 2);
  ASSERT_TRUE(completions.ok());
  EXPECT_EQ(completions->items[0].text, "a");
  EXPECT_EQ(completions->generated_tokens, 4);
}

TEST(Wire, InfoFieldsIncludingPlimsollsOwn) {
  auto info = wire::parse_info(HttpReply{
      200, R"({"model_id":"m","max_input_length":10,"max_total_tokens":20,"max_client_batch_size":0,"safe_client_batch_size":12,"max_queued_tokens":99})",
      "", ""});
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->model_id, "m");
  EXPECT_EQ(info->max_input_tokens, 10);
  EXPECT_EQ(info->safe_client_batch_size, 12);
  EXPECT_EQ(info->max_queued_tokens, 99);
}

TEST(Sse, EventsSurviveAnySplit) {
  const std::string stream = "data:{\"a\":1}\n\nevent: x\r\ndata: {\"b\":2}\r\n\r\n: comment\n\ndata: [DONE]\n\n";
  for (size_t step = 1; step <= stream.size(); ++step) {
    SseParser parser;
    std::vector<std::string> events;
    for (size_t at = 0; at < stream.size(); at += step) {
      ASSERT_TRUE(parser.feed(std::string_view(stream).substr(at, step), [&](std::string_view d) {
        events.emplace_back(d);
        return true;
      }));
    }
    ASSERT_EQ(events.size(), 3u) << step;
    EXPECT_EQ(events[0], "{\"a\":1}");
    EXPECT_EQ(events[1], "{\"b\":2}");
    EXPECT_EQ(events[2], "[DONE]");
  }
}

}  // namespace
}  // namespace plimsoll::client
