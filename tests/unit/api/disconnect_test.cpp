// Streams and client disconnects: a client that goes away mid-stream, or
// while a non-streamed answer is being generated, must cancel its ticket;
// /health and /metrics still answer while streams run.
#include "api_fixture.h"
#include "raw_socket.h"

#include <atomic>
#include <thread>

namespace plimsoll::testing {
namespace {

// Reads a stream until `frames` data frames arrived, then drops the connection.
void read_then_disconnect(int port, const std::string& path, const json& body, int frames) {
  httplib::Client client("127.0.0.1", port);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  int seen = 0;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    std::string chunk(data, n);
    for (size_t p = chunk.find("data:"); p != std::string::npos; p = chunk.find("data:", p + 1)) ++seen;
    return seen < frames;  // false: abort, the client closes the socket
  };
  client.send(req);
}

TEST_F(ApiTest, ClientDisconnectCancelsTheStream) {
  service_.endless_ = true;
  service_.token_delay_ = std::chrono::milliseconds(5);
  read_then_disconnect(server_->port(), "/generate_stream", json{{"inputs", "hi"}}, 2);
  ASSERT_TRUE(service_.wait_for_cancel(std::chrono::seconds(10)));
  EXPECT_EQ(service_.cancelled().size(), 1u);
}

TEST_F(ApiTest, QuietClientDisconnectIsFoundByKeepAlive) {
  service_.endless_ = true;
  service_.token_delay_ = std::chrono::milliseconds(400);  // slower than the keep-alive
  read_then_disconnect(server_->port(), "/v1/completions",
                       json{{"prompt", "hi"}, {"stream", true}}, 1);
  ASSERT_TRUE(service_.wait_for_cancel(std::chrono::seconds(10)));
}

TEST_F(ApiTest, HealthAndMetricsAnswerWhileStreamsRun) {
  service_.endless_ = true;
  service_.token_delay_ = std::chrono::milliseconds(20);
  constexpr int kStreams = 8;
  std::vector<std::thread> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.emplace_back([this] {
      read_then_disconnect(server_->port(), "/generate_stream", json{{"inputs", "hi"}}, 20);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto health = client_->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  for (auto& t : streams) t.join();
}

// A non-streamed request whose client closes its socket stops generating.
void send_then_close(int port, const std::string& path, const json& body, FakeService& service) {
  const std::string text = body.dump();
  RawSocket client(port);
  ASSERT_TRUE(client.send("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // generating
  EXPECT_TRUE(service.cancelled().empty());  // still wanted while the client waits
}

TEST_F(ApiTest, ClientLeavingANonStreamedGenerateCancelsIt) {
  service_.endless_ = true;
  service_.token_delay_ = std::chrono::milliseconds(5);
  send_then_close(server_->port(), "/generate", json{{"inputs", "hi"}}, service_);
  ASSERT_TRUE(service_.wait_for_cancel(std::chrono::seconds(10)));
  EXPECT_EQ(service_.cancelled().size(), 1u);
}

TEST_F(ApiTest, ClientLeavingANonStreamedCompletionCancelsIt) {
  service_.endless_ = true;
  service_.token_delay_ = std::chrono::milliseconds(5);
  send_then_close(server_->port(), "/v1/completions", json{{"prompt", "hi"}}, service_);
  ASSERT_TRUE(service_.wait_for_cancel(std::chrono::seconds(10)));
}

TEST_F(ApiTest, KeepAliveRequestsAfterAWatchedOneAreServed) {
  for (int i = 0; i < 3; ++i) {  // one connection: each request's watch ends before the next head
    auto r = client_->Post("/generate", json{{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 2}}}}.dump(),
                           "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  }
  EXPECT_TRUE(service_.cancelled().empty());
}

TEST_F(ApiTest, StopEndsOpenStreams) {
  service_.endless_ = true;
  service_.token_delay_ = std::chrono::milliseconds(5);
  std::thread stream([this] {
    read_then_disconnect(server_->port(), "/generate_stream", json{{"inputs", "hi"}}, 1000000);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server_->stop();
  server_->wait();
  stream.join();  // returns: the server closed the stream
  ASSERT_TRUE(service_.wait_for_cancel(std::chrono::seconds(5)));
}

}  // namespace
}  // namespace plimsoll::testing
