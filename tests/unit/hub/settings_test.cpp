// Environment variables -> HubSettings (huggingface_hub's precedence), repo
// ids, URLs and the progress line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "hub/cache_layout.h"
#include "hub/download_progress.h"
#include "hub/file_download.h"
#include "hub/http_fetch.h"
#include "hub/hub_settings.h"
#include "hub/repo_ref.h"
#include "../formats/safetensors_writer.h"
#include "test_paths.h"

namespace plimsoll::hub {
namespace {

HubSettings from(const std::map<std::string, std::string>& vars) {
  return settings_from_env([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(HubSettings, CacheFolderPrecedence) {
  EXPECT_EQ(from({{"HOME", "/home/u"}}).cache_dir, "/home/u/.cache/huggingface/hub");
  EXPECT_EQ(from({{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/xdg"}}).cache_dir, "/xdg/huggingface/hub");
  EXPECT_EQ(from({{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/xdg"}, {"HF_HOME", "/hf"}}).cache_dir, "/hf/hub");
  EXPECT_EQ(from({{"HF_HOME", "/hf"}, {"HUGGINGFACE_HUB_CACHE", "/old"}}).cache_dir, "/old");
  EXPECT_EQ(from({{"HF_HOME", "/hf"}, {"HUGGINGFACE_HUB_CACHE", "/old"}, {"HF_HUB_CACHE", "/cache"}}).cache_dir,
            "/cache");
  EXPECT_EQ(from({{"HOME", "/home/u"}, {"HF_HOME", "~/hf"}}).cache_dir, "/home/u/hf/hub");
}

TEST(HubSettings, EndpointTokenOfflineProgress) {
  HubSettings d = from({{"HOME", "/nonexistent"}});
  EXPECT_EQ(d.endpoint, "https://huggingface.co");
  EXPECT_EQ(d.token, "");
  EXPECT_FALSE(d.offline);
  EXPECT_TRUE(d.progress);
  EXPECT_EQ(from({{"HF_ENDPOINT", "http://127.0.0.1:8080/"}}).endpoint, "http://127.0.0.1:8080");
  EXPECT_EQ(from({{"HF_TOKEN", "hf_a\n"}, {"HUGGING_FACE_HUB_TOKEN", "hf_b"}}).token, "hf_a");
  EXPECT_EQ(from({{"HUGGING_FACE_HUB_TOKEN", "hf_b"}}).token, "hf_b");
  const std::string home = testing::make_temp_dir();
  testing::write_text(home + "/token", "hf_from_file\n");
  EXPECT_EQ(from({{"HF_HOME", home}}).token, "hf_from_file");
  EXPECT_EQ(from({{"HF_HOME", home}, {"HF_TOKEN", "hf_env"}}).token, "hf_env");
  EXPECT_TRUE(from({{"HF_HUB_OFFLINE", "1"}}).offline);
  EXPECT_TRUE(from({{"TRANSFORMERS_OFFLINE", "yes"}}).offline);
  EXPECT_FALSE(from({{"HF_HUB_OFFLINE", "0"}}).offline);
  EXPECT_FALSE(from({{"HF_HUB_DISABLE_PROGRESS_BARS", "true"}}).progress);
  EXPECT_EQ(from({{"HF_HUB_DOWNLOAD_TIMEOUT", "30"}}).timeout_seconds, 30);
}

TEST(RepoRef, ParsesIdsAndRevisions) {
  auto r = parse_repo_ref("openai-community/gpt2");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->repo_id, "openai-community/gpt2");
  EXPECT_EQ(r->revision, "main");
  r = parse_repo_ref("gpt2@v1.0");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->repo_id, "gpt2");
  EXPECT_EQ(r->revision, "v1.0");
  r = parse_repo_ref("org/m@refs/pr/1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->revision, "refs/pr/1");
  for (const char* bad : {"a/b/c", "org--x/y", "a/..b", "/abs", "org/", "a b/c", "x@", "-a/b", "x@../../etc",
                          "x@/abs", "x@a//b"}) {
    EXPECT_FALSE(parse_repo_ref(bad).ok()) << bad;
  }
  EXPECT_TRUE(is_commit_hash("0123456789abcdef0123456789abcdef01234567"));
  EXPECT_FALSE(is_commit_hash("main"));
}

TEST(HubUrls, ResolveUrlsAndLocations) {
  EXPECT_EQ(resolve_url("https://huggingface.co", "org/m", "refs/pr/1", "sub dir/config.json"),
            "https://huggingface.co/org/m/resolve/refs%2Fpr%2F1/sub%20dir/config.json");
  EXPECT_EQ(resolve_location("http://h:1/a/b/c?x=1", "/d/e"), "http://h:1/d/e");
  EXPECT_EQ(resolve_location("http://h:1/a/b/c", "d"), "http://h:1/a/b/d");
  EXPECT_EQ(resolve_location("https://h/a", "//cdn.example/x"), "https://cdn.example/x");
  EXPECT_EQ(resolve_location("http://h/a", "https://cdn/x"), "https://cdn/x");
  auto p = split_url("https://cdn-lfs.hf.co:443/repos/x?sig=1");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->origin, "https://cdn-lfs.hf.co:443");
  EXPECT_EQ(p->target, "/repos/x?sig=1");
  EXPECT_FALSE(split_url("ftp://x/y").ok());
  EXPECT_EQ(repo_folder_name("org/name"), "models--org--name");
}

TEST(DownloadProgress, LineHasBytesRateAndEta) {
  const std::string line = DownloadProgress::line("org/m model.safetensors", 16 * 1048576, 64 * 1048576,
                                                  16 * 1048576, 4.0);
  EXPECT_EQ(line, "org/m model.safetensors: 16.00 MiB / 64.00 MiB (25%), 4.0 MiB/s, ETA 12s");
  EXPECT_EQ(DownloadProgress::line("f", 10, -1, 10, 0), "f: 10 B");
}

TEST(DownloadProgress, PlainLinesWhenNotATerminal) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  DownloadProgress p(out);
  p.start("org/m model.safetensors", 2048, 1024);
  p.add(1024);  // within 10 s of the start: no line yet
  p.finish();
  std::rewind(out);
  char buf[512] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, out);
  std::fclose(out);
  const std::string text(buf, n);
  EXPECT_EQ(text.rfind("org/m model.safetensors: resuming at 1.00 KiB\norg/m model.safetensors: 2.00 KiB / 2.00 KiB (100%)", 0), 0u)
      << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
}

}  // namespace
}  // namespace plimsoll::hub
