// `plimsoll batch` killed with SIGKILL at random moments and restarted: the
// output ends with exactly one correct line per input, in order.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <fstream>
#include <random>

#include "fake_server.h"
#include "test_paths.h"

extern char** environ;

namespace plimsoll::client {
namespace {

using nlohmann::json;

pid_t spawn_batch(const std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// The exit status, or -1 when it ran past the timeout (then it is killed).
int wait_for(pid_t pid, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

TEST(BatchCommand, SurvivesSigkillAtRandomMoments) {
  testing::TgiScript script;
  script.info["safe_client_batch_size"] = 4;
  script.delay_ms = 25;
  testing::FakeServer server([&](httplib::Server& s) { testing::add_tgi_routes(s, script); });
  const std::string dir = testing::make_temp_dir();
  constexpr int kItems = 300;
  {
    std::ofstream in(dir + "/in.jsonl");
    for (int i = 0; i < kItems; ++i) in << json{{"prompt", std::string("p").append(std::to_string(i))}, {"id", i}}.dump() << "\n";
  }
  const std::vector<std::string> args = {testing::plimsoll_binary(), "batch", "--url", server.url(), "--input",
                                         dir + "/in.jsonl", "--output", dir + "/out.jsonl", "--parallel", "3"};
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> moment_ms(80, 500);
  for (int kill_round = 0; kill_round < 3; ++kill_round) {
    pid_t pid = spawn_batch(args, dir + "/log.txt");
    ASSERT_GT(pid, 0);
    const int at = moment_ms(rng);
    std::this_thread::sleep_for(std::chrono::milliseconds(at));
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    std::ifstream out(dir + "/out.jsonl");
    size_t lines = 0;
    for (std::string line; std::getline(out, line);) ++lines;
    std::printf("seed %u: killed at %d ms with %zu lines written\n", seed, at, lines);
  }
  pid_t pid = spawn_batch(args, dir + "/log.txt");
  ASSERT_GT(pid, 0);
  ASSERT_EQ(wait_for(pid, 60'000), 0) << testing::read_file(dir + "/log.txt");

  std::ifstream out(dir + "/out.jsonl");
  std::vector<json> lines;
  for (std::string line; std::getline(out, line);) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), static_cast<size_t>(kItems)) << "seed " << seed;
  for (int i = 0; i < kItems; ++i) {
    EXPECT_EQ(lines[i]["index"], i) << "seed " << seed;
    EXPECT_EQ(lines[i]["id"], i);
    EXPECT_EQ(lines[i]["generated_text"], testing::echo(std::string("p").append(std::to_string(i))));
  }
  EXPECT_EQ(testing::read_file(dir + "/out.jsonl").back(), '\n');
}

}  // namespace
}  // namespace plimsoll::client
