// HfTokenizer on small hand-written tokenizer.json files: each component's
// rules, merge forms, added-token stripping, and the errors for what we lack.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/text_tokenizer.h"
#include "test_paths.h"

namespace plimsoll {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kDataDir = fs::path(testing::source_dir()) / "tests" / "data";

// Characters a..e and their merges "a b" -> ab, "ab c" -> abc; byte-level off.
json tiny_bpe() {
  return json::parse(R"({
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true,
              "vocab": {"<unk>": 0, "<s>": 1, "a": 2, "b": 3, "c": 4, "ab": 5, "abc": 6, " ": 7, "d": 8},
              "merges": ["a b", "ab c"]},
    "added_tokens": [
      {"id": 1, "content": "<s>", "special": true, "normalized": false}
    ],
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
  })");
}

Result<HfTokenizer> make(const json& j) { return HfTokenizer::from_json(j.dump()); }

std::vector<int32_t> ids(std::initializer_list<int32_t> list) { return list; }

TEST(HfTokenizer, MergesByRankAndWrapsWithTemplate) {
  Result<HfTokenizer> t = make(tiny_bpe());
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->encode("abc", false), ids({6}));
  EXPECT_EQ(t->encode("abcab", false), ids({6, 5}));
  EXPECT_EQ(t->encode("abc", true), ids({1, 6}));
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_TRUE(t->adds_prefix());
  EXPECT_TRUE(t->is_special(1));
  EXPECT_FALSE(t->is_special(6));
  // No decoder: HF joins the token strings with spaces.
  EXPECT_EQ(t->decode(ids({1, 6, 7, 5})), "abc   ab");
}

TEST(HfTokenizer, PairFormMergesEqualStringForm) {
  json j = tiny_bpe();
  j["model"]["merges"] = json::parse(R"([["a", "b"], ["ab", "c"]])");
  Result<HfTokenizer> t = make(j);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->encode("abcab", false), ids({6, 5}));
}

TEST(HfTokenizer, UnknownCharactersFuseIntoOneUnk) {
  Result<HfTokenizer> t = make(tiny_bpe());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->encode("axyzb", false), ids({2, 0, 3}));
  json j = tiny_bpe();
  j["model"]["fuse_unk"] = false;
  Result<HfTokenizer> unfused = make(j);
  ASSERT_TRUE(unfused.ok());
  EXPECT_EQ(unfused->encode("axyzb", false), ids({2, 0, 0, 0, 3}));
}

TEST(HfTokenizer, IgnoreMergesTakesWholeWordsFromTheVocab) {
  json j = tiny_bpe();
  j["model"]["vocab"]["bd"] = 9;  // reachable by no merge
  j["model"]["ignore_merges"] = true;
  Result<HfTokenizer> t = make(j);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->encode("bd", false), ids({9}));
  j["model"]["ignore_merges"] = false;
  Result<HfTokenizer> merging = make(j);
  ASSERT_TRUE(merging.ok());
  EXPECT_EQ(merging->encode("bd", false), ids({3, 8}));
}

TEST(HfTokenizer, AddedTokensStripWhitespaceWhenAsked) {
  json j = tiny_bpe();
  j["added_tokens"].push_back(
      {{"id", 10}, {"content", "<x>"}, {"special", false}, {"lstrip", true}, {"rstrip", true},
       {"normalized", false}});
  Result<HfTokenizer> t = make(j);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->encode("ab  <x>  c", false), ids({5, 10, 4}));
  EXPECT_FALSE(t->is_special(10));
  EXPECT_EQ(t->decode(ids({5, 10})), "ab <x>");  // no decoder: joined with a space
}

TEST(HfTokenizer, MetaspaceAndDigitsPreTokenizers) {
  json j = tiny_bpe();
  j["model"]["vocab"] = json::parse(R"({"<unk>": 0, "<s>": 1, "\u2581": 2, "a": 3, "1": 4, "2": 5,
                                        "\u2581a": 6})");
  j["model"]["merges"] = json::parse(R"(["\u2581 a"])");
  j["pre_tokenizer"] = json::parse(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": true},
      {"type": "Digits", "individual_digits": true}]})");
  j["decoder"] = json::parse(R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first"})");
  Result<HfTokenizer> t = make(j);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->encode("a a12", false), ids({6, 6, 4, 5}));
  EXPECT_EQ(t->encode("<s>a", false), ids({1, 3}));  // "first": not after an added token
  EXPECT_EQ(t->decode(ids({6, 6, 4, 5})), "a a12");
}

TEST(HfTokenizer, StreamDecoderWorksThroughTheInterface) {
  Result<HfTokenizer> t =
      HfTokenizer::load_dir((kDataDir / "hf_tokenizer" / "llama3-small").string());
  ASSERT_TRUE(t.ok()) << t.error().message;
  const TextTokenizer& tokenizer = *t;
  const std::string text = "Grüße 😀 from 東京";
  const std::vector<int32_t> encoded = tokenizer.encode(text, false);
  StreamDecoder stream(tokenizer);
  std::string out;
  for (const int32_t id : encoded) out += stream.push(id);
  out += stream.finish();
  EXPECT_EQ(out, text);
  EXPECT_EQ(tokenizer.decode(encoded), text);
}

TEST(HfTokenizer, ConfigGivesBosEosAndChatTemplate) {
  Result<HfTokenizerConfig> config = parse_hf_tokenizer_config(
      R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>",
          "chat_template": [{"name": "default", "template": "{{ x }}"}]})",
      "tokenizer_config.json");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->bos_token, "<s>");
  EXPECT_EQ(config->eos_token, "</s>");
  EXPECT_EQ(config->chat_template, "{{ x }}");
}

struct UnsupportedCase {
  const char* patch;     // JSON merged into tiny_bpe()
  const char* message;   // expected error text
};

TEST(HfTokenizer, UnsupportedFeaturesNameTheField) {
  const UnsupportedCase cases[] = {
      {R"({"model": {"type": "Unigram"}})", "tokenizer.json: model.type 'Unigram' is not supported"},
      {R"({"model": {"dropout": 0.1}})", "tokenizer.json: model.dropout '0.1' is not supported"},
      {R"({"model": {"continuing_subword_prefix": "##"}})",
       "tokenizer.json: model.continuing_subword_prefix '\"##\"' is not supported"},
      {R"({"normalizer": {"type": "BertNormalizer"}})",
       "tokenizer.json: normalizer.type 'BertNormalizer' is not supported"},
      {R"({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}]}})",
       "tokenizer.json: pre_tokenizer.pretokenizers[0].type 'Whitespace' is not supported"},
      {R"({"pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Contiguous"}})",
       "tokenizer.json: pre_tokenizer.behavior 'Contiguous' is not supported"},
      {R"({"decoder": {"type": "WordPiece"}})", "tokenizer.json: decoder.type 'WordPiece' is not supported"},
      {R"({"post_processor": {"type": "Weird"}})",
       "tokenizer.json: post_processor.type 'Weird' is not supported"},
  };
  for (const UnsupportedCase& c : cases) {
    json j = tiny_bpe();
    j.merge_patch(json::parse(c.patch));
    Result<HfTokenizer> t = make(j);
    ASSERT_FALSE(t.ok()) << c.patch;
    EXPECT_EQ(t.error().code, ErrorCode::kUnsupported) << c.patch;
    EXPECT_EQ(t.error().message, c.message);
  }
}

TEST(HfTokenizer, BrokenFilesAreInvalidFileErrors) {
  EXPECT_EQ(HfTokenizer::from_json("{not json").error().code, ErrorCode::kInvalidFile);
  EXPECT_EQ(HfTokenizer::from_json("[]").error().code, ErrorCode::kInvalidFile);
  json j = tiny_bpe();
  j["model"]["merges"] = json::parse(R"(["a zz"])");
  Result<HfTokenizer> t = make(j);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kInvalidFile);
  EXPECT_NE(t.error().message.find("model.merges"), std::string::npos) << t.error().message;
  j = tiny_bpe();
  j["pre_tokenizer"] = json::parse(R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"})");
  t = make(j);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("pre_tokenizer.pattern"), std::string::npos) << t.error().message;
  EXPECT_EQ(HfTokenizer::load_dir("/nonexistent").error().code, ErrorCode::kNotFound);
  j = tiny_bpe();
  j["model"]["vocab"]["huge"] = 1 << 30;  // would size tables by the id
  t = make(j);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kInvalidFile);
}

TEST(HfTokenizer, InvalidUtf8InputIsReadAsReplacementCharacters) {
  Result<HfTokenizer> t =
      HfTokenizer::load_dir((kDataDir / "hf_tokenizer" / "gpt2-small").string());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->encode("a\xff" "b", false), t->encode("a\xEF\xBF\xBD" "b", false));
}

}  // namespace
}  // namespace plimsoll
