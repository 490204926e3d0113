// The output file as checkpoint: scanning complete lines, cutting a torn tail,
// in-order appending of out-of-order completions, and a job that resumes.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "client/batch_job.h"
#include "client/checkpoint.h"
#include "fake_server.h"
#include "test_paths.h"

namespace plimsoll::client {
namespace {

using nlohmann::json;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<json> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

TEST(Checkpoint, MissingFileIsEmpty) {
  ClientResult<CheckpointScan> scan = scan_checkpoint(testing::make_temp_dir() + "/none.jsonl");
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(scan->complete_lines, 0u);
  EXPECT_FALSE(scan->torn());
}

TEST(Checkpoint, CompleteLinesKeptTornTailCut) {
  const std::string path = testing::make_temp_dir() + "/out.jsonl";
  const std::string good = "{\"index\":0,\"id\":\"a\"}\n{\"index\":1}\n";
  write_text(path, good + "{\"index\":2,\"generated_te");
  ClientResult<CheckpointScan> scan = scan_checkpoint(path);
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ(scan->complete_lines, 2u);
  EXPECT_EQ(scan->valid_bytes, good.size());
  EXPECT_TRUE(scan->torn());
  EXPECT_EQ(scan->ids[0], "a");
  EXPECT_TRUE(scan->ids[1].is_null());
  ASSERT_TRUE(truncate_checkpoint(path, scan->valid_bytes).ok());
  EXPECT_EQ(testing::read_file(path), good);
}

TEST(Checkpoint, AnOutOfOrderOrCorruptLineEndsTheValidPrefix) {
  const std::string path = testing::make_temp_dir() + "/out.jsonl";
  write_text(path, "{\"index\":0}\n{\"index\":2}\n{\"index\":3}\n");
  EXPECT_EQ(scan_checkpoint(path)->complete_lines, 1u);
  write_text(path, "{\"index\":0}\n\x01garbage\n");
  EXPECT_EQ(scan_checkpoint(path)->complete_lines, 1u);
}

TEST(OrderedAppender, WritesStrictlyInOrderBufferingEarlyLines) {
  const std::string path = testing::make_temp_dir() + "/out.jsonl";
  write_text(path, "{\"index\":0}\n");
  auto out = OrderedAppender::open(path, 1);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE((*out)->complete(3, "{\"index\":3}").ok());
  ASSERT_TRUE((*out)->complete(2, "{\"index\":2}").ok());
  EXPECT_EQ((*out)->buffered(), 2u);
  EXPECT_EQ(testing::read_file(path), "{\"index\":0}\n");
  ASSERT_TRUE((*out)->complete(1, "{\"index\":1}").ok());
  EXPECT_EQ((*out)->buffered(), 0u);
  EXPECT_EQ((*out)->next_index(), 4u);
  EXPECT_EQ(scan_checkpoint(path)->complete_lines, 4u);
  EXPECT_FALSE((*out)->complete(2, "again").ok());  // never twice
}

TEST(BatchJob, ResumesAfterNCompleteLinesAndATornOne) {
  testing::TgiScript script;
  script.info["safe_client_batch_size"] = 3;
  testing::FakeServer server([&](httplib::Server& s) { testing::add_tgi_routes(s, script); });
  const std::string dir = testing::make_temp_dir();
  std::string input;
  for (int i = 0; i < 10; ++i) input += json{{"prompt", std::string("p").append(std::to_string(i))}, {"id", i}}.dump() + "\n";
  input += "not json\n";
  write_text(dir + "/in.jsonl", input);
  std::string done;
  for (int i = 0; i < 4; ++i) done += json{{"index", i}, {"id", i}, {"generated_text", "old"}}.dump() + "\n";
  write_text(dir + "/out.jsonl", done + "{\"index\":4,\"id\":4,\"genera");

  JobOptions options;
  options.url = server.url();
  options.input_path = dir + "/in.jsonl";
  options.output_path = dir + "/out.jsonl";
  options.progress = nullptr;
  ClientResult<JobSummary> summary = run_batch_job(options);
  ASSERT_TRUE(summary.ok()) << summary.error().describe();
  EXPECT_EQ(summary->already_done, 4u);
  EXPECT_EQ(summary->succeeded, 6u);
  EXPECT_EQ(summary->failed, 1u);
  EXPECT_EQ(summary->failures_by_kind["validation"], 1);

  std::multiset<std::string> requested;
  for (const auto& r : script.requests) requested.insert(r.begin(), r.end());
  EXPECT_EQ(requested, (std::multiset<std::string>{"p4", "p5", "p6", "p7", "p8", "p9"}));
  std::vector<json> lines = read_lines(dir + "/out.jsonl");
  ASSERT_EQ(lines.size(), 11u);
  for (size_t i = 0; i < 11; ++i) EXPECT_EQ(lines[i]["index"], i);
  EXPECT_EQ(lines[3]["generated_text"], "old");
  EXPECT_EQ(lines[4]["generated_text"], testing::echo("p4"));
  EXPECT_EQ(lines[9]["id"], 9);
  EXPECT_EQ(lines[10]["error_type"], "validation");

  // Run again: nothing left to do, nothing sent.
  const size_t before = script.requests.size();
  ASSERT_TRUE(run_batch_job(options).ok());
  EXPECT_EQ(script.requests.size(), before);
  EXPECT_EQ(read_lines(dir + "/out.jsonl").size(), 11u);
}

TEST(BatchJob, RefusesTheOutputOfAnotherInput) {
  const std::string dir = testing::make_temp_dir();
  write_text(dir + "/in.jsonl", "{\"prompt\":\"a\",\"id\":\"x\"}\n");
  write_text(dir + "/out.jsonl", "{\"index\":0,\"id\":\"y\",\"generated_text\":\"\"}\n");
  JobOptions options;
  options.url = "http://127.0.0.1:1";
  options.input_path = dir + "/in.jsonl";
  options.output_path = dir + "/out.jsonl";
  options.progress = nullptr;
  ClientResult<JobSummary> summary = run_batch_job(options);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.error().message.find("another input"), std::string::npos) << summary.error().message;
}

}  // namespace
}  // namespace plimsoll::client
