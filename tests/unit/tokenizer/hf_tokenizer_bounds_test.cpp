// tokenizer.json sizes: an id far past the tokens the file defines (which would
// size the id table, 32 bytes an entry) and a file past the size limit are
// errors naming the file, the field, the value and the limit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "tokenizer/hf_json.h"
#include "tokenizer/hf_tokenizer.h"

namespace plimsoll {
namespace {

using nlohmann::json;

json tiny() {
  return json::parse(R"({
    "model": {"type": "BPE", "vocab": {"<s>": 0, "a": 1, "b": 2, "ab": 3}, "merges": ["a b"]},
    "added_tokens": [{"id": 0, "content": "<s>", "special": true, "normalized": false}]
  })");
}

void expect_error(const json& j, std::vector<std::string> parts) {
  Result<HfTokenizer> t = HfTokenizer::from_json(j.dump());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kInvalidFile);
  for (const std::string& p : parts) {
    EXPECT_NE(t.error().message.find(p), std::string::npos) << "'" << p << "' not in: " << t.error().message;
  }
}

TEST(HfTokenizerBounds, AVocabIdFarPastItsEntriesIsAnError) {
  json j = tiny();
  j["model"]["vocab"]["b"] = hf::kMaxTokenIds - 1;  // once: a table of 2^24 strings (512 MiB)
  expect_error(j, {"tokenizer.json", "vocab", "id 16777215 of 'b' is not below 65540", "4 entries + 65536"});
}

TEST(HfTokenizerBounds, AnAddedTokenIdFarPastTheVocabIsAnError) {
  json j = tiny();
  j["added_tokens"].push_back({{"id", 10'000'000}, {"content", "<big>"}, {"special", true}});
  expect_error(j, {"tokenizer.json", "added_tokens", "10000000 of '<big>' is not below 65542",
                   "6 tokens defined + 65536"});
}

TEST(HfTokenizerBounds, IdsWithAFewHolesStillLoad) {
  json j = tiny();
  j["model"]["vocab"]["b"] = 100;
  j["model"]["merges"] = json::array();
  j["added_tokens"].push_back({{"id", 5000}, {"content", "<pad>"}, {"special", true}});
  Result<HfTokenizer> t = HfTokenizer::from_json(j.dump());
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->token(100), "b");
  EXPECT_EQ(t->token(5000), "<pad>");
}

TEST(HfTokenizerBounds, AFileLargerThanTheLimitIsRefusedUnread) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("plimsoll-huge-tokenizer-" + std::to_string(::getpid()) + ".json")).string();
  {
    std::ofstream out(path, std::ios::binary);
    out << "{}";
  }
  std::filesystem::resize_file(path, static_cast<uintmax_t>(hf::kMaxTokenizerFileBytes) + 1);  // sparse
  Result<HfTokenizer> t = HfTokenizer::load_file(path, "");
  std::filesystem::remove(path);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kInvalidFile);
  EXPECT_NE(t.error().message.find(path + ": 134217729 bytes, more than the 134217728"), std::string::npos)
      << t.error().message;
}

}  // namespace
}  // namespace plimsoll
