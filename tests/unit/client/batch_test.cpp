// generate_batch against a fake server: chunks of the safe size, results in
// input order, 429 Retry-After honoured, 422 found item by item and not
// retried, a server that is away retried until it is back or the deadline.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "client/client.h"
#include "fake_server.h"

namespace plimsoll::client {
namespace {

using Clock = std::chrono::steady_clock;
using testing::echo;
using testing::FakeServer;
using testing::TgiScript;

std::vector<std::string> prompts(size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back("prompt " + std::to_string(i));
  return out;
}

BatchOptions fast_retries() {
  BatchOptions o;
  o.retry.initial_backoff_ms = 50;
  o.retry.max_backoff_ms = 200;
  o.retry.deadline_ms = 10'000;
  return o;
}

TEST(Batch, ChunksOfTheSafeSizeInParallelResultsInInputOrder) {
  TgiScript script;
  script.info["safe_client_batch_size"] = 4;
  script.random_delay_ms = 30;  // completions arrive out of order
  FakeServer server([&](httplib::Server& s) { testing::add_tgi_routes(s, script); });
  Client client(server.url());
  const std::vector<std::string> input = prompts(103);
  BatchOptions options = fast_retries();
  options.parallel = 3;
  std::vector<size_t> seen;
  options.on_item = [&](size_t index, const ItemResult&) { seen.push_back(index); };
  BatchResult result = client.generate_batch(input, {}, options);

  EXPECT_EQ(result.stats.chunk_size, 4);
  EXPECT_EQ(result.stats.chunks, 26);
  EXPECT_EQ(result.stats.failed, 0);
  EXPECT_EQ(result.stats.generated_tokens, 3 * 103);
  ASSERT_EQ(result.items.size(), input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    ASSERT_TRUE(result.items[i].ok()) << i;
    EXPECT_EQ(result.items[i]->text, echo(input[i]));
  }
  std::multiset<std::string> requested;
  for (const auto& request : script.requests) {
    EXPECT_LE(request.size(), 4u);
    requested.insert(request.begin(), request.end());
  }
  EXPECT_EQ(requested, std::multiset<std::string>(input.begin(), input.end()));  // each once
  EXPECT_LE(script.max_in_flight.load(), 3);
  EXPECT_GT(script.max_in_flight.load(), 1);
  EXPECT_EQ(seen.size(), input.size());
}

TEST(Batch, UserCapSmallerThanTheServerWins) {
  TgiScript script;
  script.info["safe_client_batch_size"] = 64;
  FakeServer server([&](httplib::Server& s) { testing::add_tgi_routes(s, script); });
  Client client(server.url());
  BatchOptions options = fast_retries();
  options.max_chunk_size = 5;
  BatchResult result = client.generate_batch(prompts(12), {}, options);
  EXPECT_EQ(result.stats.chunk_size, 5);
  ASSERT_EQ(script.requests.size(), 3u);
}

TEST(Batch, OverloadedIsRetriedAfterRetryAfterSeconds) {
  TgiScript script;
  script.info["safe_client_batch_size"] = 8;
  std::atomic<int> refused{0};
  script.refuse = [&](const std::vector<std::string>&, httplib::Response& res) {
    if (refused++ > 0) return 0;
    testing::set_error(res, 429, "overloaded", "queue full");
    res.set_header("Retry-After", "1");
    return 429;
  };
  FakeServer server([&](httplib::Server& s) { testing::add_tgi_routes(s, script); });
  Client client(server.url());
  std::vector<RetryNote> notes;
  BatchOptions options = fast_retries();
  options.on_retry = [&](const RetryNote& n) { notes.push_back(n); };
  BatchResult result = client.generate_batch(prompts(3), {}, options);
  ASSERT_TRUE(result.items[2].ok()) << result.items[2].error().describe();
  ASSERT_EQ(script.arrivals.size(), 2u);
  const auto waited_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(script.arrivals[1] - script.arrivals[0]).count();
  EXPECT_GE(waited_ms, 1000);
  EXPECT_LT(waited_ms, 1800);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].wait_ms, 1000);
  EXPECT_EQ(notes[0].error.kind, ErrorKind::kOverloaded);
  EXPECT_EQ(result.stats.retries, 1);
}

TEST(Batch, OverloadedGivesUpAfterMaxRetries) {
  TgiScript script;
  script.refuse = [&](const std::vector<std::string>&, httplib::Response& res) {
    testing::set_error(res, 429, "overloaded", "queue full");
    return 429;
  };
  FakeServer server([&](httplib::Server& s) { testing::add_tgi_routes(s, script); });
  Client client(server.url());
  BatchOptions options = fast_retries();
  options.retry.max_retries = 2;
  BatchResult result = client.generate_batch(prompts(2), {}, options);
  ASSERT_FALSE(result.items[0].ok());
  EXPECT_EQ(result.items[0].error().kind, ErrorKind::kOverloaded);
  EXPECT_EQ(script.requests.size(), 3u);  // the try and two retries
}

TEST(Batch, ValidationErrorIsFoundItemByItemAndNotRetried) {
  TgiScript script;
  script.info["safe_client_batch_size"] = 5;
  script.refuse = [&](const std::vector<std::string>& inputs, httplib::Response& res) {
    for (const std::string& s : inputs) {
      if (s == "prompt 7") {
        testing::set_error(res, 422, "validation", "prompt 7 is too long");
        return 422;
      }
    }
    return 0;
  };
  FakeServer server([&](httplib::Server& s) { testing::add_tgi_routes(s, script); });
  Client client(server.url());
  BatchOptions options = fast_retries();
  options.parallel = 1;
  BatchResult result = client.generate_batch(prompts(10), {}, options);
  for (size_t i = 0; i < 10; ++i) {
    if (i == 7) continue;
    ASSERT_TRUE(result.items[i].ok()) << i << ": " << result.items[i].error().describe();
    EXPECT_EQ(result.items[i]->text, echo("prompt " + std::to_string(i)));
  }
  ASSERT_FALSE(result.items[7].ok());
  EXPECT_EQ(result.items[7].error().kind, ErrorKind::kValidation);
  EXPECT_EQ(result.items[7].error().http_status, 422);
  EXPECT_EQ(result.items[7].error().message, "prompt 7 is too long");
  int sent_bad = 0;
  for (const auto& request : script.requests) sent_bad += std::count(request.begin(), request.end(), "prompt 7");
  EXPECT_EQ(sent_bad, 2);  // in its chunk, then alone; never retried
  EXPECT_EQ(script.requests.size(), 1u + 1u + 5u);
  EXPECT_EQ(result.stats.retries, 0);
}

TEST(Batch, UnavailableRetriedUntilTheDeadline) {
  TgiScript script;
  script.refuse = [&](const std::vector<std::string>&, httplib::Response& res) {
    testing::set_error(res, 503, "unavailable", "shutting down");
    return 503;
  };
  FakeServer server([&](httplib::Server& s) { testing::add_tgi_routes(s, script); });
  Client client(server.url());
  BatchOptions options = fast_retries();
  options.retry.deadline_ms = 1000;
  options.retry.max_retries = 1;  // does not limit a server that is away
  const auto start = Clock::now();
  BatchResult result = client.generate_batch(prompts(1), {}, options);
  const auto took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  ASSERT_FALSE(result.items[0].ok());
  EXPECT_EQ(result.items[0].error().kind, ErrorKind::kUnavailable);
  EXPECT_GT(script.requests.size(), 3u);
  EXPECT_LT(took_ms, 1500);
}

TEST(Batch, AServerThatComesBackIsWaitedFor) {
  int port = 0;
  { FakeServer first([](httplib::Server&) {}); port = first.port(); }
  TgiScript script;
  std::unique_ptr<FakeServer> later;
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    later = std::make_unique<FakeServer>([&](httplib::Server& s) { testing::add_tgi_routes(s, script); }, port);
  });
  Client client("http://127.0.0.1:" + std::to_string(port));
  BatchResult result = client.generate_batch(prompts(6), {}, fast_retries());
  starter.join();
  ASSERT_EQ(later->port(), port);
  for (size_t i = 0; i < 6; ++i) ASSERT_TRUE(result.items[i].ok()) << result.items[i].error().describe();
}

}  // namespace
}  // namespace plimsoll::client
