// Fixture for the download tests: a tiny GPT-2 folder served by the hub
// stand-in, an empty cache folder, and settings that point at both.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "../formats/hf_folder.h"
#include "hub/model_source.h"
#include "hub_stand_in.h"
#include "test_paths.h"

namespace plimsoll::testing {

class HubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = make_temp_dir();
    write_hf_folder(dir, kGpt2Config, gpt2_tensors());
    script_.files = read_folder(dir);
    cache_ = make_temp_dir() + "/hub";
  }

  // Starts the stand-in (after the test has set the script).
  void start() { stand_in_ = std::make_unique<HubStandIn>(script_); }

  hub::HubSettings settings() const {
    hub::HubSettings s;
    s.endpoint = stand_in_ ? stand_in_->url() : "http://127.0.0.1:1";
    s.cache_dir = cache_;
    s.timeout_seconds = 5;
    return s;
  }

  Result<std::string> resolve(const std::string& id, const hub::HubSettings& s) {
    return hub::resolve_model_source(id, s, nullptr);
  }
  Result<std::string> resolve(const std::string& id = "org/tiny") { return resolve(id, settings()); }

  std::string repo_dir(const std::string& id = "org/tiny") const {
    return cache_ + "/models--" + id.substr(0, id.find('/')) + "--" + id.substr(id.find('/') + 1);
  }

  // The next resolve succeeds, asking for model.safetensors from `offset` on,
  // and the file ends byte-identical.
  void expect_resumed_from(int64_t offset) {
    auto got = resolve();
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(script_.ranges.back(), "bytes=" + std::to_string(offset) + "-");
    EXPECT_EQ(read_file(*got + "/model.safetensors"), script_.files["model.safetensors"]);
  }

  static void expect_error(const Result<std::string>& r, ErrorCode code, const std::vector<std::string>& parts) {
    ASSERT_FALSE(r.ok()) << "resolved to " << r.value();
    EXPECT_EQ(r.error().code, code) << r.error().message;
    for (const std::string& p : parts) {
      EXPECT_NE(r.error().message.find(p), std::string::npos) << "'" << p << "' not in: " << r.error().message;
    }
  }

  StandInScript script_;
  std::unique_ptr<HubStandIn> stand_in_;
  std::string cache_;
};

}  // namespace plimsoll::testing
