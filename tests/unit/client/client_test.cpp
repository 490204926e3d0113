// Client calls against a fake server: each route, the stream, the API key,
// kept-alive connections, and transport errors (refused, timed out).
#include <gtest/gtest.h>

#include <set>

#include "client/client.h"
#include "fake_server.h"

namespace plimsoll::client {
namespace {

using nlohmann::json;
using testing::FakeServer;

TEST(Client, GenerateReusesOneConnectionAndSendsTheApiKey) {
  std::mutex mutex;
  std::set<int> client_ports;
  std::vector<std::string> auth;
  FakeServer server([&](httplib::Server& s) {
    s.Post("/generate", [&](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mutex);
      client_ports.insert(req.remote_port);
      auth.push_back(req.get_header_value("Authorization"));
      json body = json::parse(req.body);
      res.set_content(json{{"generated_text", "hi " + body["inputs"].get<std::string>()}}.dump(), "application/json");
    });
  });
  ClientOptions options;
  options.api_key = "secret";
  Client client(server.url(), options);
  for (int i = 0; i < 5; ++i) {
    ClientResult<Generation> g = client.generate(std::string("x").append(std::to_string(i)));
    ASSERT_TRUE(g.ok()) << g.error().describe();
    EXPECT_EQ(g->text, std::string("hi x").append(std::to_string(i)));
  }
  EXPECT_EQ(client_ports.size(), 1u);  // keep-alive: one connection for all five
  EXPECT_EQ(auth.front(), "Bearer secret");
}

TEST(Client, TypedErrorsFromStatus) {
  FakeServer server([&](httplib::Server& s) {
    s.Post("/generate", [&](const httplib::Request& req, httplib::Response& res) {
      const std::string input = json::parse(req.body)["inputs"];
      if (input == "422") testing::set_error(res, 422, "validation", "too long");
      if (input == "424") testing::set_error(res, 424, "generation", "boom");
      if (input == "503") testing::set_error(res, 503, "unavailable", "warming up");
      if (input == "429") {
        testing::set_error(res, 429, "overloaded", "queue full");
        res.set_header("Retry-After", "3");
      }
      if (input == "bad") res.set_content("{not json", "application/json");
    });
  });
  Client client(server.url());
  EXPECT_EQ(client.generate("422").error().kind, ErrorKind::kValidation);
  EXPECT_EQ(client.generate("424").error().kind, ErrorKind::kGeneration);
  EXPECT_EQ(client.generate("503").error().kind, ErrorKind::kUnavailable);
  ClientResult<Generation> overloaded = client.generate("429");
  EXPECT_EQ(overloaded.error().kind, ErrorKind::kOverloaded);
  EXPECT_EQ(overloaded.error().retry_after_seconds, 3);
  EXPECT_EQ(client.generate("bad").error().kind, ErrorKind::kProtocol);
}

TEST(Client, StreamDeliversTokensAndTheFinalText) {
  FakeServer server([&](httplib::Server& s) {
    s.Post("/generate_stream", [&](const httplib::Request&, httplib::Response& res) {
      std::string body;
      const char* words[] = {"Once", " upon", " a"};
      for (int i = 0; i < 3; ++i) {
        json event = {{"index", i + 1}, {"token", {{"id", i}, {"text", words[i]}, {"special", false}}},
                      {"generated_text", nullptr}, {"details", nullptr}};
        if (i == 2) {
          event["generated_text"] = "Once upon a";
          event["details"] = {{"finish_reason", "length"}, {"generated_tokens", 3}};
        }
        body += "data:" + event.dump() + "\n\n";
      }
      res.set_content(body, "text/event-stream");
    });
  });
  Client client(server.url());
  std::vector<std::string> tokens;
  ClientResult<Generation> g = client.generate_stream("x", {}, [&](const StreamToken& t) {
    tokens.push_back(t.text);
    return true;
  });
  ASSERT_TRUE(g.ok()) << g.error().describe();
  EXPECT_EQ(tokens, (std::vector<std::string>{"Once", " upon", " a"}));
  EXPECT_EQ(g->text, "Once upon a");
  EXPECT_EQ(g->finish_reason, "length");
  EXPECT_EQ(g->generated_tokens, 3);
}

TEST(Client, StreamErrorFrameAndErrorStatus) {
  FakeServer server([&](httplib::Server& s) {
    s.Post("/generate_stream", [&](const httplib::Request& req, httplib::Response& res) {
      if (json::parse(req.body)["inputs"] == "refuse") return testing::set_error(res, 422, "validation", "no");
      res.set_content("data:{\"error\":\"died\",\"error_type\":\"generation\"}\n\n", "text/event-stream");
    });
  });
  Client client(server.url());
  EXPECT_EQ(client.generate_stream("refuse", {}, nullptr).error().kind, ErrorKind::kValidation);
  ClientResult<Generation> died = client.generate_stream("x", {}, nullptr);
  ASSERT_FALSE(died.ok());
  EXPECT_EQ(died.error().kind, ErrorKind::kGeneration);
  EXPECT_EQ(died.error().message, "died");
}

TEST(Client, OpenAiRoutes) {
  FakeServer server([&](httplib::Server& s) {
    s.Post("/v1/completions", [&](const httplib::Request& req, httplib::Response& res) {
      json body = json::parse(req.body);
      json choices = json::array();
      json prompts = body["prompt"].is_array() ? body["prompt"] : json::array({body["prompt"]});
      for (size_t i = prompts.size(); i-- > 0;) choices.push_back({{"index", i}, {"text", "c:" + prompts[i].get<std::string>()}});
      res.set_content(json{{"choices", choices}, {"usage", {{"completion_tokens", 5}}}}.dump(), "application/json");
    });
    s.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
      json body = json::parse(req.body);
      json message = {{"role", "assistant"}, {"content", "re:" + body["messages"].back()["content"].get<std::string>()}};
      res.set_content(json{{"choices", {{{"index", 0}, {"message", message}, {"finish_reason", "stop"}}}}}.dump(),
                      "application/json");
    });
  });
  Client client(server.url());
  EXPECT_EQ(client.completions("p")->text, "c:p");
  ClientResult<GenerationList> list = client.completions_list({"a", "b"}, {});
  ASSERT_TRUE(list.ok()) << list.error().describe();
  EXPECT_EQ(list->items[0].text, "c:a");
  EXPECT_EQ(list->items[1].text, "c:b");
  ClientResult<Generation> chat = client.chat({{"user", "hello"}});
  ASSERT_TRUE(chat.ok()) << chat.error().describe();
  EXPECT_EQ(chat->text, "re:hello");
  EXPECT_EQ(chat->finish_reason, "stop");
}

TEST(Client, RefusedAndTimedOutAreTransportErrors) {
  int port = 0;
  { FakeServer gone([](httplib::Server&) {}); port = gone.port(); }
  Client refused("http://127.0.0.1:" + std::to_string(port));
  ClientResult<ServerInfo> info = refused.info();
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().kind, ErrorKind::kTransport);

  FakeServer slow([](httplib::Server& s) {
    s.Post("/generate", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      res.set_content(json{{"generated_text", "late"}}.dump(), "application/json");
    });
  });
  ClientOptions options;
  options.read_timeout_ms = 300;
  Client impatient(slow.url(), options);
  ClientResult<Generation> late = impatient.generate("x");
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().kind, ErrorKind::kTransport) << late.error().describe();
}

}  // namespace
}  // namespace plimsoll::client
