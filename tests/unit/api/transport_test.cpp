// The transport's limits over raw sockets: each is enforced before any body
// byte is read, answers with a JSON error naming the limit, and leaves the
// server serving.
#include <thread>

#include "api/body_budget.h"
#include "api_fixture.h"
#include "raw_socket.h"

namespace plimsoll::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string head(const std::string& request_line, const std::vector<std::string>& fields = {}) {
  std::string out = request_line + "\r\nHost: 127.0.0.1\r\n";
  for (const auto& f : fields) out += f + "\r\n";
  return out + "\r\n";
}

std::string post_head(const std::string& path, int64_t content_length, std::vector<std::string> fields = {}) {
  fields.push_back("Content-Type: application/json");
  fields.push_back("Content-Length: " + std::to_string(content_length));
  return head("POST " + path + " HTTP/1.1", fields);
}

// The JSON error of a raw response: status, error_type and a part of the message.
void expect_raw_error(const std::string& response, int status, const std::string& type, const std::string& part) {
  ASSERT_EQ(status_of(response), status) << response;
  EXPECT_NE(response.find("Content-Type: application/json"), std::string::npos) << response;
  json b = json::parse(body_of(response));
  EXPECT_EQ(b["error_type"], type) << response;
  EXPECT_NE(b["error"].get<std::string>().find(part), std::string::npos) << response;
}

class TransportTest : public ApiTest {
 protected:
  void expect_still_serving() {
    auto r = post("/generate", json{{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 2}}}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  }
};

TEST_F(TransportTest, HeadOverTheByteLimitIs431) {
  restart([](api::ApiConfig& c) { c.max_header_bytes = 2048; });
  RawSocket s(server_->port());
  ASSERT_TRUE(s.send(head("GET /health HTTP/1.1", {"X-Big: " + std::string(4096, 'a')})));
  expect_raw_error(s.read_all(seconds(10)), 431, "validation", "--max-header-bytes");
  expect_still_serving();
}

TEST_F(TransportTest, TooManyHeaderFieldsIs431) {
  restart([](api::ApiConfig& c) { c.max_header_fields = 10; });
  std::vector<std::string> fields;
  for (int i = 0; i < 20; ++i) fields.push_back("X-F" + std::to_string(i) + ": 1");
  RawSocket s(server_->port());
  ASSERT_TRUE(s.send(head("GET /health HTTP/1.1", fields)));
  expect_raw_error(s.read_all(seconds(10)), 431, "validation", "--max-header-fields");
  RawSocket ok(server_->port());
  ASSERT_TRUE(ok.send(head("GET /health HTTP/1.1", {"Connection: close"})));
  EXPECT_EQ(status_of(ok.read_all(seconds(10))), 200);
}

TEST_F(TransportTest, AnyTransferEncodingInAnyCaseIs411BeforeTheBody) {
  for (const std::string te : {"cHuNkEd", "Chunked", "gzip", "gzip, chunked"}) {
    RawSocket s(server_->port());
    // Only the head is sent: the answer must not wait for a body.
    ASSERT_TRUE(s.send(head("POST /generate HTTP/1.1", {"Transfer-Encoding: " + te})));
    expect_raw_error(s.read_all(seconds(10)), 411, "validation", "Content-Length");
  }
  // Both framings at once are refused the same way.
  RawSocket both(server_->port());
  ASSERT_TRUE(both.send(head("POST /generate HTTP/1.1", {"Content-Length: 5", "Transfer-Encoding: chunked"})));
  expect_raw_error(both.read_all(seconds(10)), 411, "validation", "Content-Length");
  expect_still_serving();
}

TEST_F(TransportTest, PostWithoutContentLengthIs411) {
  RawSocket s(server_->port());
  ASSERT_TRUE(s.send(head("POST /generate HTTP/1.1", {"Content-Type: application/json"}) + "{\"inputs\":\"hi\"}"));
  expect_raw_error(s.read_all(seconds(10)), 411, "validation", "Content-Length");
}

TEST_F(TransportTest, HugeContentLengthIs413BeforeTheBody) {
  RawSocket s(server_->port());
  ASSERT_TRUE(s.send(post_head("/generate", 1'000'000'000)));
  expect_raw_error(s.read_all(seconds(10)), 413, "validation", "2000000 bytes");
}

TEST_F(TransportTest, BadKeyWithAHugeContentLengthIs401WithoutTheBody) {
  restart([](api::ApiConfig& c) { c.api_key = "s3cret"; });
  RawSocket s(server_->port());
  ASSERT_TRUE(s.send(post_head("/generate", 1'000'000'000, {"Authorization: Bearer wrong"})));
  expect_raw_error(s.read_all(seconds(10)), 401, "unauthorized", "Bearer");
  RawSocket none(server_->port());
  ASSERT_TRUE(none.send(post_head("/v1/completions", 1'500'000)));
  const std::string response = none.read_all(seconds(10));  // OpenAI's error object on /v1
  ASSERT_EQ(status_of(response), 401) << response;
  json b = json::parse(body_of(response));
  EXPECT_EQ(b["error"]["code"], "invalid_api_key") << response;
  EXPECT_NE(b["error"]["message"].get<std::string>().find("Bearer"), std::string::npos) << response;
}

TEST_F(TransportTest, SlowLorisIsCutAtTheRequestDeadline) {
  restart([](api::ApiConfig& c) { c.read_timeout_seconds = 1; });
  RawSocket s(server_->port());
  const std::string request = head("GET /health HTTP/1.1", {"X-Slow: " + std::string(100, 'a')});
  // One byte every 50 ms: each read is quick, the whole head would take ~7 s;
  // the server closes the connection at the 1 s deadline, long before.
  size_t sent = 0;
  while (sent < request.size() && s.send(request.substr(sent, 1))) {
    ++sent;
    if (s.closed_within(milliseconds(50))) break;
  }
  EXPECT_LT(sent, request.size()) << "the whole head was accepted";
  // A connection that never sends a byte is closed at the deadline too.
  RawSocket idle(server_->port());
  EXPECT_TRUE(idle.closed_within(seconds(10)));
  expect_still_serving();
}

TEST_F(TransportTest, HealthMetricsAndInfoAnswerWhileEveryWorkerIsBusy) {
  restart([](api::ApiConfig& c) { c.threads = 4; });
  service_.endless_ = true;
  service_.token_delay_ = milliseconds(20);
  std::vector<std::unique_ptr<RawSocket>> busy;
  const std::string body = json{{"inputs", "hi"}}.dump();
  for (int i = 0; i < 4; ++i) {  // each holds a worker until cancelled (non-streamed, endless)
    busy.push_back(std::make_unique<RawSocket>(server_->port()));
    ASSERT_TRUE(busy.back()->send(post_head("/generate", static_cast<int64_t>(body.size())) + body));
  }
  ASSERT_TRUE(service_.wait_for_submissions(4, seconds(10)));
  for (const std::string path : {"/health", "/metrics", "/info"}) {
    RawSocket s(server_->port());
    ASSERT_TRUE(s.send(head("GET " + path + " HTTP/1.1", {"Connection: close"})));
    EXPECT_EQ(status_of(s.read_all(seconds(10))), 200) << path;
  }
}

TEST_F(TransportTest, AtTheConnectionCapTheLongestHeadReaderIsEvicted) {
  restart([](api::ApiConfig& c) { c.max_connections = 4; });
  std::vector<std::unique_ptr<RawSocket>> slow;
  for (int i = 0; i < 4; ++i) {
    slow.push_back(std::make_unique<RawSocket>(server_->port()));
    ASSERT_TRUE(slow.back()->send("GET /health HTTP/1.1\r\n"));  // a head that never ends
    std::this_thread::sleep_for(milliseconds(20));
  }
  RawSocket probe(server_->port());
  ASSERT_TRUE(probe.send(head("GET /health HTTP/1.1", {"Connection: close"})));
  EXPECT_EQ(status_of(probe.read_all(seconds(10))), 200);
  EXPECT_TRUE(slow[0]->closed_within(seconds(10)));  // the oldest reader made room
}

TEST_F(TransportTest, AtTheConnectionCapASlowBodyIsEvictedAndItsBudgetReturned) {
  restart([](api::ApiConfig& c) { c.max_connections = 3; });
  std::vector<std::unique_ptr<RawSocket>> slow;
  for (int i = 0; i < 3; ++i) {  // whole heads, bodies that never come
    slow.push_back(std::make_unique<RawSocket>(server_->port()));
    ASSERT_TRUE(slow.back()->send(post_head("/generate", 1000)));
    std::this_thread::sleep_for(milliseconds(20));
  }
  RawSocket probe(server_->port());
  ASSERT_TRUE(probe.send(head("GET /health HTTP/1.1", {"Connection: close"})));
  EXPECT_EQ(status_of(probe.read_all(seconds(10))), 200);
  EXPECT_TRUE(slow[0]->closed_within(seconds(10)));  // the oldest request made room
  slow.clear();
  expect_still_serving();
}

TEST_F(TransportTest, AtTheConnectionCapWithNobodyReadingTheNewOneIs503) {
  restart([](api::ApiConfig& c) { c.max_connections = 2; });
  service_.endless_ = true;
  service_.token_delay_ = milliseconds(20);
  const std::string body = json{{"inputs", "hi"}}.dump();
  std::vector<std::unique_ptr<RawSocket>> streams;
  for (int i = 0; i < 2; ++i) {
    streams.push_back(std::make_unique<RawSocket>(server_->port()));
    ASSERT_TRUE(streams.back()->send(post_head("/generate_stream", static_cast<int64_t>(body.size())) + body));
    EXPECT_NE(streams.back()->read_until("data:", seconds(10)).find("data:"), std::string::npos);
  }
  RawSocket refused(server_->port());
  ASSERT_TRUE(refused.send(head("GET /health HTTP/1.1", {"Connection: close"})));
  expect_raw_error(refused.read_all(seconds(10)), 503, "overloaded", "--max-connections");
}

// The body budget's charging, cuts and 429s: body_budget_test.cpp.

TEST_F(TransportTest, ABudgetSmallerThanOneBodyIsRefusedAtStart) {
  api::ApiConfig c;
  c.hostname = "127.0.0.1";
  c.port = 0;
  c.payload_limit_bytes = 1000;
  c.max_body_bytes_in_flight = 1000;
  api::ApiServer server(c, service_, tokenizer_, metrics_);
  Status st = server.start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("--max-body-bytes-in-flight"), std::string::npos) << st.error().message;
}

TEST_F(TransportTest, ASlowStreamReaderIsCancelledAtTheQueueBound) {
  restart([](api::ApiConfig& c) { c.stream_queue_bytes = 4096; });
  service_.endless_ = true;  // tokens as fast as the fake engine can push them
  const std::string body = json{{"inputs", "hi"}}.dump();
  RawSocket reader(server_->port(), /*receive_buffer_bytes=*/2048);
  ASSERT_TRUE(reader.send(post_head("/generate_stream", static_cast<int64_t>(body.size())) + body));
  // The reader reads nothing: the queue passes its bound and the ticket is cancelled.
  ASSERT_TRUE(service_.wait_for_cancel(seconds(10)));
  std::string stream = reader.read_until("--stream-queue-bytes", seconds(10));
  EXPECT_EQ(status_of(stream), 200);
  EXPECT_NE(stream.find("too slowly"), std::string::npos) << stream.substr(stream.size() > 500 ? stream.size() - 500 : 0);
  EXPECT_NE(stream.find("--stream-queue-bytes"), std::string::npos);
  service_.endless_ = false;
  expect_still_serving();
}

TEST_F(TransportTest, Http10AndExpectContinueAreServed) {
  RawSocket old(server_->port());
  ASSERT_TRUE(old.send("GET /health HTTP/1.0\r\n\r\n"));
  std::string r = old.read_all(seconds(10));
  EXPECT_EQ(r.rfind("HTTP/1.0 200", 0), 0u) << r;
  const std::string body = json{{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 2}}}}.dump();
  RawSocket s(server_->port());
  ASSERT_TRUE(s.send(post_head("/generate", static_cast<int64_t>(body.size()), {"Expect: 100-continue"})));
  EXPECT_EQ(s.read_until("\r\n\r\n", seconds(10)).rfind("HTTP/1.1 100", 0), 0u);
  ASSERT_TRUE(s.send(body));
  EXPECT_NE(s.read_until("generated_text", seconds(10)).find("HTTP/1.1 200"), std::string::npos);
}

TEST_F(TransportTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  RawSocket s(server_->port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(s.send(head("GET /info HTTP/1.1")));
    std::string r = s.read_until("\"docker_label\"", seconds(10));
    EXPECT_EQ(status_of(r), 200) << i;
  }
}

// A client that sends its next request the moment it has read an answer
// (hey, Go's client) on routes that run on a worker: every request is
// answered. The watch read of one request (noticing a client that leaves)
// used to be cancelled late enough to take the next request's bytes, which
// then waited for the request deadline (1 in ~10 hey runs of 1,000 requests).
TEST_F(TransportTest, BackToBackKeepAliveRequestsOnWorkerRoutesAreAllAnswered) {
  constexpr int kClients = 8;
  constexpr int kRequests = 400;
  const std::string body = json{{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 1}}}}.dump();
  const std::string request = post_head("/generate", static_cast<int64_t>(body.size())) + body;
  std::vector<int> answered(kClients, 0);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      RawSocket s(server_->port());
      for (int i = 0; i < kRequests; ++i) {
        if (!s.send(request)) return;
        std::string r = s.read_until("\"}", seconds(5));
        if (status_of(r) != 200) return;
        ++answered[c];
      }
    });
  }
  for (auto& t : clients) t.join();
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(answered[c], kRequests) << "client " << c;
}

TEST_F(TransportTest, StopAnswersAWaitingRequest503) {
  service_.endless_ = true;
  service_.token_delay_ = milliseconds(20);
  const std::string body = json{{"inputs", "hi"}}.dump();
  RawSocket s(server_->port());
  ASSERT_TRUE(s.send(post_head("/generate", static_cast<int64_t>(body.size()), {"Connection: close"}) + body));
  ASSERT_TRUE(service_.wait_for_submissions(1, seconds(10)));
  std::thread stopper([this] { server_->stop(); });
  std::string r = s.read_all(seconds(10));
  stopper.join();
  expect_raw_error(r, 503, "unavailable", "shutting down");
}

TEST(TransportBudget, WorstCaseCountsBudgetConnectionsAndQueues) {
  api::ApiConfig c;
  c.max_connections = 10;
  c.stream_queue_bytes = 1000;
  const int64_t expected = api::body_budget_bytes(c) + api::connection_buffer_bytes(c) * 10 + 1000 * 7;
  EXPECT_EQ(api::transport_worst_case_bytes(c, 7), expected);
  // Auto: one payload-limit body and the largest tree it may parse into.
  EXPECT_EQ(api::body_budget_bytes(c), c.payload_limit_bytes + api::json_tree_limit_bytes(c.payload_limit_bytes));
}

}  // namespace
}  // namespace plimsoll::testing
