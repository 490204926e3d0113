// run_batch_job on the OpenAI routes: completions sends list prompts in
// chunks, chat one conversation per request; both write lines in input order.
#include <gtest/gtest.h>

#include <fstream>

#include "client/batch_job.h"
#include "fake_server.h"
#include "test_paths.h"

namespace plimsoll::client {
namespace {

using nlohmann::json;

std::vector<json> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

void add_openai_routes(httplib::Server& s, std::atomic<int>& requests) {
  s.Get("/info", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(json{{"safe_client_batch_size", 3}}.dump(), "application/json");
  });
  s.Post("/v1/completions", [&requests](const httplib::Request& req, httplib::Response& res) {
    ++requests;
    json prompts = json::parse(req.body)["prompt"];
    json choices = json::array();
    for (size_t i = 0; i < prompts.size(); ++i) choices.push_back({{"index", i}, {"text", "c:" + prompts[i].get<std::string>()}});
    res.set_content(json{{"choices", choices}, {"usage", {{"completion_tokens", 2 * prompts.size()}}}}.dump(),
                    "application/json");
  });
  s.Post("/v1/chat/completions", [&requests](const httplib::Request& req, httplib::Response& res) {
    ++requests;
    json body = json::parse(req.body);
    json message = {{"role", "assistant"}, {"content", "re:" + body["messages"].back()["content"].get<std::string>()}};
    res.set_content(json{{"choices", {{{"index", 0}, {"message", message}, {"finish_reason", "stop"}}}}}.dump(),
                    "application/json");
  });
}

JobOptions job(const std::string& url, const std::string& dir, Route route) {
  JobOptions o;
  o.url = url;
  o.input_path = dir + "/in.jsonl";
  o.output_path = dir + "/out.jsonl";
  o.route = route;
  o.progress = nullptr;
  return o;
}

TEST(BatchRoutes, CompletionsInChunksChatOneByOne) {
  std::atomic<int> requests{0};
  testing::FakeServer server([&](httplib::Server& s) { add_openai_routes(s, requests); });
  const std::string dir = testing::make_temp_dir();
  {
    std::ofstream in(dir + "/in.jsonl");
    for (int i = 0; i < 7; ++i) in << json{{"prompt", std::string("p").append(std::to_string(i))}}.dump() << "\n";
  }
  ClientResult<JobSummary> done = run_batch_job(job(server.url(), dir, Route::kCompletions));
  ASSERT_TRUE(done.ok()) << done.error().describe();
  EXPECT_EQ(requests.load(), 3);  // 3 + 3 + 1
  EXPECT_EQ(done->generated_tokens, 14);
  std::vector<json> lines = read_lines(dir + "/out.jsonl");
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[6]["generated_text"], "c:p6");

  const std::string chat_dir = testing::make_temp_dir();
  {
    std::ofstream in(chat_dir + "/in.jsonl");
    for (int i = 0; i < 4; ++i) {
      in << json{{"id", i}, {"messages", {{{"role", "user"}, {"content", std::string("m").append(std::to_string(i))}}}}}.dump()
         << "\n";
    }
    in << json{{"prompt", "not a chat"}}.dump() << "\n";
  }
  requests = 0;
  done = run_batch_job(job(server.url(), chat_dir, Route::kChat));
  ASSERT_TRUE(done.ok()) << done.error().describe();
  EXPECT_EQ(requests.load(), 4);
  EXPECT_EQ(done->failed, 1u);
  lines = read_lines(chat_dir + "/out.jsonl");
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[2]["generated_text"], "re:m2");
  EXPECT_EQ(lines[2]["finish_reason"], "stop");
  EXPECT_EQ(lines[4]["error_type"], "validation");
}

}  // namespace
}  // namespace plimsoll::client
