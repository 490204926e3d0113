// transformers' clean_up_tokenization (tokenizer_config.json
// clean_up_tokenization_spaces): decode() applies it, and StreamDecoder's chunks
// concatenate to that decode whatever token a chunk ends on. Expected texts are
// Python's rule (transformers' tokenization_utils_base.clean_up_tokenization, the
// replaces in its order) applied to the raw decode.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/stream_decoder.h"
#include "test_paths.h"

namespace plimsoll {
namespace {

HfTokenizer gpt2_small(bool clean_up) {
  const auto dir = std::filesystem::path(testing::source_dir()) / "tests" / "data" / "hf_tokenizer" / "gpt2-small";
  std::ifstream in(dir / "tokenizer.json");
  std::stringstream text;
  text << in.rdbuf();
  HfTokenizerConfig config;
  config.clean_up_tokenization_spaces = clean_up;
  auto t = HfTokenizer::from_json(text.str(), config);
  EXPECT_TRUE(t.ok()) << t.error().message;
  return std::move(t).value();
}

// {raw decode, Python's clean_up_tokenization of it}
const std::vector<std::pair<std::string, std::string>> kCases = {
      {R"(Hello , world ! I 'm here . Isn 't it ?)", R"(Hello, world! I'm here. Isn 't it?)"},
      {R"(They 've said ' yes ' and we 're fine .)", R"(They've said'yes'and we're fine.)"},
      {R"(a  . b ' ' c)", R"(a . b'' c)"},
      {R"(no change here)", R"(no change here)"},
      {R"(end with space )", R"(end with space )"},
      {R"(x ' s)", R"(x's)"}};

TEST(CleanUpTokenization, DecodeAppliesTransformersRule) {
  const HfTokenizer on = gpt2_small(true), off = gpt2_small(false);
  for (const auto& [raw, cleaned] : kCases) {
    const auto ids = on.encode(raw, false);
    ASSERT_EQ(off.decode(ids), raw);
    EXPECT_EQ(on.decode(ids), cleaned) << raw;
    EXPECT_EQ(clean_up_tokenization(raw), cleaned) << raw;
  }
}

TEST(CleanUpTokenization, StreamedChunksConcatenateToTheDecode) {
  const HfTokenizer on = gpt2_small(true);
  for (const auto& [raw, cleaned] : kCases) {
    StreamDecoder stream(on);
    std::string text;
    for (const int32_t id : on.encode(raw, false)) text += stream.push(id);
    text += stream.finish();
    EXPECT_EQ(text, cleaned) << raw;
  }
  // Every split of every case: the stable prefix's cleanup plus the rest's is the whole's.
  for (const auto& [raw, cleaned] : kCases) {
    for (size_t cut = 0; cut <= raw.size(); ++cut) {
      const std::string head = raw.substr(0, cut);
      const size_t n = clean_up_stable_prefix(head);
      EXPECT_EQ(clean_up_tokenization(head.substr(0, n)) + clean_up_tokenization(raw.substr(n)), cleaned)
          << raw << " cut " << cut;
    }
  }
}

}  // namespace
}  // namespace plimsoll
