// Bounded request parsing: nesting and tree-size limits answered as 422 that
// name the limit, without recursion (a 200,000-deep body is refused at depth
// 65); the counted tree bound holds against glibc's real allocation figures;
// the routes parse through it and charge /tokenize before tokenizing.
#include "api/request_json.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include "api_fixture.h"

namespace plimsoll::api {
namespace {

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string nested(size_t depth) { return repeat("[", depth) + repeat("]", depth); }

TEST(RequestJson, ParsesOrdinaryBodies) {
  auto j = parse_request_json(R"({"inputs":["a","b"],"parameters":{"max_new_tokens":5,"stop":["x"]}})");
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_EQ((*j)["inputs"][1], "b");
  EXPECT_EQ((*j)["parameters"]["max_new_tokens"], 5);
}

TEST(RequestJson, InvalidJsonNamesThePosition) {
  auto j = parse_request_json(R"({"inputs": )");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(j.error().message.find("not valid JSON (byte"), std::string::npos) << j.error().message;
}

TEST(RequestJson, NestingIsLimitedTo64Levels) {
  EXPECT_TRUE(parse_request_json(nested(64)).ok());
  auto j = parse_request_json(nested(65));
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(j.error().message.find("deeper than 64 levels"), std::string::npos) << j.error().message;
  auto objects = parse_request_json(repeat(R"({"a":)", 100) + "1" + repeat("}", 100));
  ASSERT_FALSE(objects.ok());
  EXPECT_NE(objects.error().message.find("deeper than 64"), std::string::npos);
}

TEST(RequestJson, A200000DeepBodyIsRefusedWithoutRecursion) {
  // The issue's chat message: content of 200,000 nested '[' (unterminated, as sent).
  const std::string body = R"({"messages":[{"role":"user","content":)" + repeat("[", 200'000) + "]}]}";
  auto j = parse_request_json(body);
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message.find("deeper than 64 levels"), std::string::npos) << j.error().message;
}

TEST(RequestJson, TheTreeIsBoundedPerBodyByte) {
  const std::string empties = "[" + repeat("{},", 600'000) + "{}]";  // the issue's unknown-field body
  auto j = parse_request_json(R"({"x":)" + empties + "}");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message.find("32 per body byte"), std::string::npos) << j.error().message;
  // A client batch of short prompts is far below it.
  const std::string prompts = R"({"inputs":[)" + repeat(R"("Hello",)", 2047) + R"("Hello"]})";
  auto ok = parse_request_json(prompts);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_LE(counted_tree_bytes(*ok), json_tree_limit_bytes(static_cast<int64_t>(prompts.size())));
  EXPECT_LT(counted_tree_bytes(*ok), 16 * static_cast<int64_t>(prompts.size()));
  // An explicit, smaller bound is enforced the same way.
  auto small = parse_request_json(prompts, JsonLimits{64, 10'000});
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().message.find("more than 10000 bytes"), std::string::npos) << small.error().message;
}

#if !defined(__SANITIZE_ADDRESS__)
int64_t heap_in_use() { return static_cast<int64_t>(mallinfo2().uordblks + mallinfo2().hblkhd); }

// The model the parser enforces is at least what glibc really holds for the
// densest bodies it accepts (each just under the bound).
TEST(RequestJson, TheCountedBoundCoversTheRealHeap) {
  for (const std::string& unit : {std::string("[],"), std::string("\"\","), std::string("0,"),
                                  std::string("{\"\":0},"), std::string("[[[[[[[[]]]]]]]],"),
                                  std::string("\"aaaaaaaaaaaaaaaaaaaa\",")}) {
    std::string body = "[";  // (appends: "[" + repeat() trips GCC 12's -Wrestrict)
    body += repeat(unit, 100'000);
    body += "0]";
    const int64_t before = heap_in_use();
    auto j = parse_request_json(body, JsonLimits{64, int64_t{1} << 40});
    ASSERT_TRUE(j.ok()) << unit;
    const int64_t real = heap_in_use() - before;
    EXPECT_LE(real, counted_tree_bytes(*j)) << unit;
  }
}
#endif

}  // namespace
}  // namespace plimsoll::api

namespace plimsoll::testing {
namespace {

TEST_F(ApiTest, DeeplyNestedChatContentIs422AndTheServerKeepsServing) {
  const std::string deep(200'000, '[');
  const std::string body = R"({"messages":[{"role":"user","content":)" + deep + "]}]}";
  auto r = post("/v1/chat/completions", body);
  expect_openai_error(r, 400, "invalid_request_error", "deeper than 64 levels");
  r = post("/generate", R"({"inputs":)" + deep + "}");
  expect_error(r, 422, "validation", "deeper than 64 levels");
  auto ok = post("/generate", json{{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 2}}}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(ApiTest, ManySmallValuesAre422NamingTheBound) {
  std::string junk;
  for (int i = 0; i < 200'000; ++i) junk += "{},";
  auto r = post("/generate", R"({"inputs":"hi","junk":[)" + junk + "{}]}");
  expect_error(r, 422, "validation", "per body byte");
}

TEST_F(ApiTest, TokenizeIsChargedBeforeTokenizing) {
  service_.reserve_limit_bytes_ = 1'000'000;
  auto r = post("/tokenize", json{{"inputs", std::string(100'000, 'x')}});
  expect_error(r, 422, "validation", "tokenizing 100000 bytes needs");
  auto ok = post("/tokenize", json{{"inputs", "hi yo"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  const std::vector<int64_t> reserved = service_.reserved();
  ASSERT_EQ(reserved.size(), 2u);
  EXPECT_GT(reserved[0], 100'000 * 64);  // per possible token: ids, span, record
}

// /tokenize is a whole request: no submission follows to meet the memory
// backstop, so its reservation does (429, the backstop's Retry-After and reason).
TEST_F(ApiTest, TokenizeIsRefusedByTheMemoryBackstop) {
  service_.pressure_ = true;
  auto r = post("/tokenize", json{{"inputs", "hi yo"}});
  expect_error(r, 429, "overloaded", "Memory pressure");
  EXPECT_EQ(r->get_header_value("Retry-After"), "3");
  auto m = client_->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("plimsoll_rejections_total{reason=\"memory_pressure\"} 1"), std::string::npos) << m->body;
  service_.pressure_ = false;
  auto ok = post("/tokenize", json{{"inputs", "hi yo"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(ApiTest, ItemsShareOneStopListAndDescribeTheirAnswer) {
  json params = {{"max_new_tokens", 3}, {"stop", {"zz", "yy"}}, {"details", true}, {"top_n_tokens", 2}};
  auto r = post("/generate", json{{"inputs", {"a", "b", "c"}}, {"parameters", params}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const auto items = service_.last_items();
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].params.stop.identity(), items[2].params.stop.identity());
  EXPECT_EQ(items[0].params.stop.size(), 2u);
  EXPECT_TRUE(items[1].token_records);
  EXPECT_FALSE(items[1].streamed);
  EXPECT_EQ(items[1].top_n_tokens, 2);
  // The prompts' tokenization was reserved before the items were built.
  ASSERT_FALSE(service_.reserved().empty());
}

TEST(MemberInOrder, ReadsOneMemberInDocumentOrder) {
  const std::string body = R"({"b":1,"response_format":{"json_schema":{"schema":{"z":1,"a":{"y":2,"b":3}}},"x":0},"a":2})";
  const nlohmann::ordered_json m = api::member_in_order(body, {"response_format", "json_schema", "schema"});
  EXPECT_EQ(m.dump(), R"({"z":1,"a":{"y":2,"b":3}})");
  EXPECT_TRUE(api::member_in_order(body, {"response_format", "nope"}).is_null());
  EXPECT_TRUE(api::member_in_order("not json", {"a"}).is_null());
  EXPECT_EQ(api::member_in_order(body, {}).dump(), R"({"b":1,"response_format":{"json_schema":{"schema":{"z":1,"a":{"y":2,"b":3}}},"x":0},"a":2})");
}

}  // namespace
}  // namespace plimsoll::testing
