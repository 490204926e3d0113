// Downloads against the loopback hub stand-in: the cache layout, the cache
// used without requests, shards, resume after a cut, redirects, and errors.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "formats/model_file.h"
#include "hub_fixture.h"

namespace plimsoll::testing {
namespace {

namespace fs = std::filesystem;

TEST_F(HubTest, DownloadsIntoTheHuggingFaceLayoutThenUsesTheCacheWithoutRequests) {
  start();
  auto dir = resolve();
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  const std::string snapshot = repo_dir() + "/snapshots/" + script_.commit;
  EXPECT_EQ(*dir, snapshot);
  EXPECT_EQ(read_file(repo_dir() + "/refs/main"), script_.commit);
  const std::string sha = sha256_hex(script_.files["model.safetensors"]);
  EXPECT_TRUE(fs::is_symlink(snapshot + "/model.safetensors"));
  EXPECT_EQ(fs::read_symlink(snapshot + "/model.safetensors"), fs::path("../../blobs/" + sha));
  EXPECT_EQ(read_file(repo_dir() + "/blobs/" + sha), script_.files["model.safetensors"]);
  EXPECT_EQ(read_file(snapshot + "/config.json"), script_.files["config.json"]);
  // Optional files the hub does not have are recorded as huggingface_hub records them.
  EXPECT_TRUE(fs::exists(repo_dir() + "/.no_exist/" + script_.commit + "/tokenizer.json"));
  auto model = load_model(*dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ(model->config.arch, "gpt2");

  const size_t requests = script_.request_count();
  auto again = resolve();
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, snapshot);
  EXPECT_EQ(script_.request_count(), requests);
}

TEST_F(HubTest, ShardedWeightsFollowTheIndex) {
  const std::string dir = make_temp_dir();
  write_sharded_hf_folder(dir, kGpt2Config, gpt2_tensors(), 2);
  script_.files = read_folder(dir);
  script_.files["tokenizer_config.json"] = "{}";
  start();
  auto got = resolve();
  ASSERT_TRUE(got.ok()) << got.error().message;
  for (const char* f : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                        "model.safetensors.index.json", "tokenizer_config.json"}) {
    EXPECT_EQ(read_file(*got + "/" + f), script_.files[f]) << f;
  }
  EXPECT_TRUE(fs::exists(repo_dir() + "/.no_exist/" + script_.commit + "/model.safetensors"));
  auto model = load_model(*got);
  ASSERT_TRUE(model.ok()) << model.error().message;
}

TEST_F(HubTest, ResumesAfterTheConnectionIsCut) {
  script_.cut_after = 100;
  start();
  auto first = resolve();
  expect_error(first, ErrorCode::kUnavailable, {"org/tiny", "model.safetensors", "cut after 100 bytes", "re-run"});
  const std::string sha = sha256_hex(script_.files["model.safetensors"]);
  const std::string part = repo_dir() + "/blobs/" + sha + ".incomplete";
  ASSERT_TRUE(fs::exists(part));
  EXPECT_EQ(fs::file_size(part), 100u);

  expect_resumed_from(100);
  EXPECT_FALSE(fs::exists(part));
}

TEST_F(HubTest, AServerThatIgnoresRangeStartsTheFileOver) {
  script_.cut_after = 64;
  script_.ignore_range = true;
  start();
  ASSERT_FALSE(resolve().ok());
  expect_resumed_from(64);  // and the server's 200 made it start over
}

TEST_F(HubTest, ABadTokenNamesHfToken) {
  script_.required_token = "hf_good";
  start();
  hub::HubSettings s = settings();
  s.token = "hf_bad";
  expect_error(resolve("org/tiny", s), ErrorCode::kInvalidArgument, {"org/tiny", "config.json", "401", "HF_TOKEN"});
  s.token.clear();
  expect_error(resolve("org/tiny", s), ErrorCode::kInvalidArgument, {"set HF_TOKEN"});
  s.token = "hf_good";
  ASSERT_TRUE(resolve("org/tiny", s).ok());
  for (const std::string& auth : script_.cdn_auth) EXPECT_EQ(auth, "") << "the token went to the CDN";
}

TEST_F(HubTest, MissingFilesAndReposAreNamed) {
  script_.files.erase("config.json");
  start();
  expect_error(resolve(), ErrorCode::kNotFound, {"org/tiny@main", "config.json", "404", "not found"});
  expect_error(resolve("org/nope"), ErrorCode::kNotFound, {"repository 'org/nope' not found"});
  expect_error(resolve("org/tiny@v9"), ErrorCode::kNotFound, {"revision 'v9' not found"});
}

TEST_F(HubTest, MissingWeightsAreNamed) {
  script_.files.erase("model.safetensors");
  start();
  expect_error(resolve(), ErrorCode::kNotFound, {"org/tiny@main", "model.safetensors.index.json"});
}

TEST_F(HubTest, OfflineUsesACompleteCacheAndNamesWhatIsMissing) {
  hub::HubSettings offline = settings();
  offline.offline = true;
  expect_error(resolve("org/tiny", offline), ErrorCode::kNotFound, {"offline", "revision 'main' is not known"});
  start();
  ASSERT_TRUE(resolve().ok());
  stand_in_.reset();  // nothing answers now
  offline = settings();
  offline.offline = true;
  auto dir = resolve("org/tiny", offline);
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  fs::remove(*dir + "/model.safetensors");
  expect_error(resolve("org/tiny", offline), ErrorCode::kNotFound, {"offline", "model.safetensors", cache_});
}

TEST_F(HubTest, AnUnreachableHubFallsBackToAUsableCache) {
  start();
  ASSERT_TRUE(resolve().ok());
  // As huggingface-cli leaves it: no record that tokenizer.json does not exist.
  fs::remove_all(repo_dir() + "/.no_exist");
  stand_in_.reset();
  auto dir = resolve();
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  EXPECT_EQ(*dir, repo_dir() + "/snapshots/" + script_.commit);
}

TEST_F(HubTest, ConcurrentResolvesShareOneDownload) {
  start();
  std::vector<Result<std::string>> got(4, Result<std::string>(std::string()));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = resolve(); });
  for (auto& t : threads) t.join();
  for (const auto& r : got) {
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(read_file(*r + "/model.safetensors"), script_.files["model.safetensors"]);
  }
}

TEST_F(HubTest, AGatedRepoSaysToAcceptItsTerms) {
  script_.gated = true;
  start();
  hub::HubSettings s = settings();
  s.token = "hf_x";
  expect_error(resolve("org/tiny", s), ErrorCode::kInvalidArgument, {"org/tiny", "403", "gated", "HF_TOKEN"});
}

TEST_F(HubTest, FollowsARelativeRedirectOfARenamedRepo) {
  script_.renamed_from = "org/old";
  start();
  auto dir = resolve("org/old");
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  EXPECT_EQ(*dir, repo_dir("org/old") + "/snapshots/" + script_.commit);
  EXPECT_TRUE(load_model(*dir).ok());
  bool followed = false;
  for (const std::string& r : script_.requests) followed |= r == "HEAD /org/tiny/resolve/main/config.json";
  EXPECT_TRUE(followed);
}

TEST_F(HubTest, ARevisionThatIsACommitNeedsNoRef) {
  start();
  auto dir = resolve("org/tiny@" + script_.commit);
  ASSERT_TRUE(dir.ok()) << dir.error().message;
  EXPECT_FALSE(fs::exists(repo_dir() + "/refs/" + script_.commit));
  const size_t requests = script_.request_count();
  hub::HubSettings offline = settings();
  offline.offline = true;
  ASSERT_TRUE(resolve("org/tiny@" + script_.commit, offline).ok());
  EXPECT_EQ(script_.request_count(), requests);
}

TEST_F(HubTest, NotEnoughDiskSpaceIsSaidBeforeDownloading) {
  script_.advertised_size = int64_t{1} << 60;
  start();
  expect_error(resolve(), ErrorCode::kIo, {"model.safetensors", "not enough disk space", "HF_HUB_CACHE"});
}

// A write that fails (here: RLIMIT_FSIZE, as a full disk would) is an error
// naming the file; what was written is kept and the next run resumes it.
TEST_F(HubTest, AFailedWriteIsNamedAndResumable) {
  start();
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 1000;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  auto first = resolve();
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  expect_error(first, ErrorCode::kIo, {"model.safetensors", "cannot write", ".incomplete", "re-run to resume"});
  expect_resumed_from(1000);
}

TEST_F(HubTest, AHostileCommitCannotLeaveTheCache) {
  script_.commit = "../../../escaped";
  start();
  expect_error(resolve(), ErrorCode::kInvalidFile, {"config.json", "X-Repo-Commit", "HF_ENDPOINT"});
  EXPECT_FALSE(fs::exists(fs::path(cache_).parent_path() / "escaped"));
}

TEST_F(HubTest, AnUnreachableHubSaysSo) {
  expect_error(resolve(), ErrorCode::kUnavailable, {"org/tiny@main", "config.json", "cannot connect", "HF_HUB_OFFLINE"});
}

TEST_F(HubTest, HttpsEndpointsGoThroughTls) {
  hub::HubSettings s = settings();
  s.endpoint = "https://127.0.0.1:1";  // nothing listens: the TLS client reports the connection, not "no HTTPS"
  expect_error(resolve("org/tiny", s), ErrorCode::kUnavailable, {"cannot connect", "https://127.0.0.1:1/org/tiny"});
}

TEST_F(HubTest, LocalPathsAreUsedAsTheyAre) {
  const std::string dir = make_temp_dir();
  auto got = resolve(dir);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, dir);
  expect_error(resolve("models/missing.gguf"), ErrorCode::kNotFound, {"no such file"});
  expect_error(resolve("a/b/c"), ErrorCode::kInvalidArgument, {"neither a local path nor a Hugging Face repo id"});
}

}  // namespace
}  // namespace plimsoll::testing
