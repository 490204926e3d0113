// Tokenizer tests on tok512.bin and on small hand-made vocabularies: round
// trips, byte fallback, special tokens, merge order, complexity, hostile vocabs.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "formats/llama2c_vocab.h"
#include "test_paths.h"

namespace plimsoll {
namespace {

const Tokenizer& stories() {
  static const Tokenizer tokenizer = [] {
    Result<Vocab> vocab = load_llama2c_vocab(testing::stories_path("tok512.bin"), 512);
    EXPECT_TRUE(vocab.ok()) << vocab.error().message;
    Result<Tokenizer> t = Tokenizer::create(std::move(vocab).value());
    EXPECT_TRUE(t.ok()) << t.error().message;
    return std::move(t).value();
  }();
  return tokenizer;
}

// A vocabulary from (piece, score, type) rows; ids in row order.
struct Row {
  std::string piece;
  float score;
  TokenType type;
};
Vocab make_vocab(const std::vector<Row>& rows) {
  Vocab v;
  for (const Row& r : rows) {
    v.pieces.push_back(r.piece);
    v.scores.push_back(r.score);
    v.types.push_back(r.type);
  }
  return v;
}
constexpr TokenType N = TokenType::kNormal;
constexpr TokenType C = TokenType::kControl;
const std::string kSp = "\xE2\x96\x81";  // U+2581

Tokenizer make(const std::vector<Row>& rows) {
  Result<Tokenizer> t = Tokenizer::create(make_vocab(rows));
  EXPECT_TRUE(t.ok()) << t.error().message;
  return std::move(t).value();
}

std::string random_text(std::mt19937* rng, const std::vector<std::string>& alphabet, int chars) {
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::string s;
  for (int i = 0; i < chars; ++i) s += alphabet[pick(*rng)];
  return s;
}

TEST(Tokenizer, RoundTripsAscii) {
  std::vector<std::string> ascii;
  for (int c = 0; c < 128; ++c) ascii.emplace_back(1, static_cast<char>(c));
  std::mt19937 rng(42);
  for (int i = 0; i < 300; ++i) {
    const std::string text = random_text(&rng, ascii, i % 40);
    EXPECT_EQ(stories().decode(stories().encode(text, true)), text);
  }
}

TEST(Tokenizer, RoundTripsValidUtf8) {
  const std::vector<std::string> alphabet = {"a",  "b",  " ",  "  ", "\n", "the", "Lily",
                                             "é",  "ß",  "Ж",  "日", "語", "😀",  "👍🏽",
                                             "™",  kSp,  "\u200a", "\xF4\x8F\xBF\xBF", ".", "!"};
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    const std::string text = random_text(&rng, alphabet, i % 30);
    EXPECT_EQ(stories().decode(stories().encode(text, true)), text);
  }
}

TEST(Tokenizer, NoBosKeepsTheDummyPrefixSpace) {
  const std::vector<int32_t> ids = stories().encode("Hello", false);
  EXPECT_EQ(stories().decode(ids), " Hello");
  EXPECT_TRUE(stories().encode("", false).empty());
  EXPECT_EQ(stories().encode("", true), std::vector<int32_t>{1});
}

TEST(Tokenizer, ByteFallbackUsesByteTokens) {
  // "日" has no piece in tok512: E6 97 A5 -> <0xE6> <0x97> <0xA5> (ids 3 + byte).
  const std::vector<int32_t> ids = stories().encode("日", false);
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[0], *stories().token_id(kSp));
  EXPECT_EQ(ids[1], 3 + 0xE6);
  EXPECT_EQ(ids[2], 3 + 0x97);
  EXPECT_EQ(ids[3], 3 + 0xA5);
  EXPECT_EQ(stories().byte_token(0xE6), 3 + 0xE6);
  EXPECT_EQ(stories().piece_text(-1, 3 + 0xE6), "\xE6");
}

TEST(Tokenizer, InvalidUtf8BytesFallBackOneByOne) {
  const std::string text = "a\xFF\xE4\xB8" "b\x80";
  const std::vector<int32_t> ids = stories().encode(text, true);
  EXPECT_EQ(stories().decode(ids), text);
  for (uint8_t b : {0xFF, 0xE4, 0xB8, 0x80}) {
    EXPECT_NE(std::find(ids.begin(), ids.end(), stories().byte_token(b)), ids.end()) << int{b};
  }
}

TEST(Tokenizer, ByteTokensAreFoundByPieceNotByPosition) {
  const Tokenizer t = make({{"<unk>", 0, TokenType::kUnknown},
                            {"<s>", 0, C},
                            {"</s>", 0, C},
                            {kSp, -1, N},
                            {"<0xC3>", 0, TokenType::kByte},
                            {"x", -2, N},
                            {"<0xA9>", 0, N}});  // not typed as byte: found by its piece
  EXPECT_EQ(t.encode("é", false), (std::vector<int32_t>{3, 4, 6}));
  EXPECT_EQ(t.byte_token(0x41), -1);
  // No byte token and no piece: the unknown token.
  EXPECT_EQ(t.encode("A", false), (std::vector<int32_t>{3, 0}));
}

TEST(Tokenizer, MergesHighestScoreFirstAndLeftmostOnTies) {
  const Tokenizer t = make({{"<unk>", 0, TokenType::kUnknown},
                            {"<s>", 0, C},
                            {"</s>", 0, C},
                            {"a", 0, N},
                            {"b", 0, N},
                            {"ab", -5, N},
                            {"bb", -1, N},
                            {"aa", -3, N}});
  // "abb": bb (-1) beats ab (-5) -> a bb.
  Tokenizer no_prefix = [&] {
    Vocab vocab = make_vocab({{"<unk>", 0, TokenType::kUnknown},
                              {"<s>", 0, C},
                              {"</s>", 0, C},
                              {"a", 0, N},
                              {"b", 0, N},
                              {"ab", -5, N},
                              {"bb", -1, N},
                              {"aa", -3, N}});
    vocab.add_space_prefix = false;
    return std::move(Tokenizer::create(std::move(vocab)).value());
  }();
  EXPECT_EQ(no_prefix.encode("abb", false), (std::vector<int32_t>{3, 6}));
  // "aaa": ties between the two "aa" pairs -> the leftmost merges: aa a.
  EXPECT_EQ(no_prefix.encode("aaa", false), (std::vector<int32_t>{7, 3}));
  EXPECT_EQ(no_prefix.encode("bbbb", false), (std::vector<int32_t>{6, 6}));
  // Without a space piece the dummy prefix has to be the unknown token.
  EXPECT_EQ(t.encode("a", false), (std::vector<int32_t>{0, 3}));
}

TEST(Tokenizer, ParsesSpecialTokensOnlyWhenAsked) {
  const Tokenizer& t = stories();
  const std::vector<int32_t> hello = t.encode("Hello", false);
  // Text after a special token gets no dummy prefix.
  const std::vector<int32_t> got = t.encode("<s>Hello</s>", false, /*parse_special=*/true);
  ASSERT_GE(got.size(), 3u);
  EXPECT_EQ(got.front(), 1);
  EXPECT_EQ(got.back(), 2);
  EXPECT_EQ(t.decode(got), "Hello");
  EXPECT_EQ(t.encode("Hello<s>", false, true),
            [&] { auto ids = hello; ids.push_back(1); return ids; }());
  EXPECT_NE(t.encode("<s>", false, false), std::vector<int32_t>{1});
  EXPECT_EQ(t.encode("<s>", false, true), std::vector<int32_t>{1});
  EXPECT_EQ(t.encode("a</s", false, true), t.encode("a</s", false, false));
}

TEST(Tokenizer, DecodeRules) {
  const Tokenizer& t = stories();
  const std::vector<int32_t> ids = t.encode("Once upon a time", true);
  EXPECT_EQ(t.piece_text(-1, ids[1]), " Once");
  EXPECT_EQ(t.piece_text(1, ids[1]), "Once");  // leading space dropped after BOS
  EXPECT_EQ(t.piece_text(1, t.byte_token(' ')), " ");  // byte tokens keep theirs
  EXPECT_EQ(t.piece_text(-1, 1), "");  // control tokens produce no text
  EXPECT_EQ(t.piece_text(-1, 2), "");
  EXPECT_EQ(t.piece_text(-1, -5), "");
  EXPECT_EQ(t.piece_text(-1, 512), "");
  std::vector<int32_t> with_eos = ids;
  with_eos.push_back(t.eos_id());
  EXPECT_EQ(t.decode(with_eos), "Once upon a time");
}

TEST(Tokenizer, Lookups) {
  const Tokenizer& t = stories();
  EXPECT_EQ(t.vocab_size(), 512);
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_TRUE(t.is_special(0));
  EXPECT_TRUE(t.is_special(1));
  EXPECT_TRUE(t.is_special(2));
  EXPECT_FALSE(t.is_special(3));
  EXPECT_FALSE(t.is_special(300));
  EXPECT_EQ(t.piece(259), kSp + "t");
  EXPECT_EQ(t.token_id(kSp + "t"), 259);
  EXPECT_EQ(t.token_id("<s>"), 1);
  EXPECT_EQ(t.token_id("no such piece"), std::nullopt);
  EXPECT_EQ(t.piece(9999), "");
  EXPECT_EQ(t.type(3), TokenType::kByte);
}

// The work of encode() grows linearly in the input (times log n for the heap):
// each merge pushes at most two new candidates, so pushes <= symbols + 2 merges.
void expect_linear_work(const Tokenizer& t, const std::string& text) {
  EncodeStats stats;
  const std::vector<int32_t> ids = t.encode(text, true, false, &stats);
  EXPECT_LE(stats.initial_symbols, static_cast<int64_t>(text.size()) + 1);
  EXPECT_LE(stats.pairs_pushed, stats.initial_symbols + 2 * stats.merges);
  EXPECT_LE(stats.merges, stats.initial_symbols);
  EXPECT_EQ(stats.pairs_popped, stats.pairs_pushed);
  EXPECT_EQ(static_cast<int64_t>(ids.size()), 1 + stats.initial_symbols - stats.merges);
}

TEST(Tokenizer, OneMegabyteInputsTakeLinearWork) {
  std::string story;
  while (story.size() < (1 << 20)) story += "Once upon a time, there was a little girl named Lily. ";
  expect_linear_work(stories(), story);
  expect_linear_work(stories(), std::string(1 << 20, ' '));
  expect_linear_work(stories(), std::string(1 << 20, 'a'));
  std::string cjk;
  while (cjk.size() < (1 << 20)) cjk += "日本語😀";
  expect_linear_work(stories(), cjk);
}

TEST(Tokenizer, LongMergeChainsStayLinear) {
  // Pieces a, aa, aaaa, ... : 1 MB of 'a' merges level by level.
  std::vector<Row> rows = {{"<unk>", 0, TokenType::kUnknown}, {"<s>", 0, C}, {"</s>", 0, C}};
  for (size_t n = 1; n <= (1 << 12); n *= 2) {
    rows.push_back({std::string(n, 'a'), static_cast<float>(n), N});
  }
  Vocab vocab = make_vocab(rows);
  vocab.add_space_prefix = false;
  const Tokenizer t = std::move(Tokenizer::create(std::move(vocab)).value());
  const std::string text(1 << 20, 'a');
  expect_linear_work(t, text);
  const std::vector<int32_t> ids = t.encode(text, false);
  EXPECT_EQ(ids.size(), (1u << 20) / (1u << 12));  // all merged into the longest piece
  EXPECT_EQ(t.decode(ids), text);
}

TEST(Tokenizer, RejectsOtherModelsAndBrokenVocabs) {
  Vocab gpt2 = make_vocab({{"a", 0, N}});
  gpt2.model = "gpt2";
  Result<Tokenizer> r = Tokenizer::create(gpt2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(r.error().message.find("gpt2"), std::string::npos);

  EXPECT_FALSE(Tokenizer::create(Vocab{}).ok());  // empty

  Vocab mismatched = make_vocab({{"a", 0, N}, {"b", 0, N}});
  mismatched.scores.pop_back();
  EXPECT_EQ(Tokenizer::create(mismatched).error().code, ErrorCode::kInvalidFile);

  Vocab bad_bos = make_vocab({{"a", 0, N}});
  bad_bos.bos_id = 7;
  EXPECT_EQ(Tokenizer::create(bad_bos).error().code, ErrorCode::kInvalidFile);
}

TEST(Tokenizer, SurvivesHostileVocabularies) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tokenizer t = make({{"", 0, N},                    // empty piece
                            {"a", nan, N},
                            {"a", 1, N},                   // duplicate: the lower id wins
                            {"aa", nan, N},
                            {"aa", inf, N},
                            {std::string(1 << 20, 'a'), -inf, N},  // huge piece
                            {"", 0, C},
                            {"<0x41>", 0, TokenType::kByte},
                            {"<0xZZ>", 0, TokenType::kByte},
                            {kSp + kSp, 3, N}});
  EXPECT_EQ(t.token_id("a"), 1);
  for (const std::string& text : {std::string("aaaa"), std::string(5000, 'a'), std::string("A  Bé"),
                                   std::string("\xFF\xFE"), std::string()}) {
    const std::vector<int32_t> ids = t.encode(text, true, true);
    for (const int32_t id : ids) EXPECT_TRUE(id >= -1 && id < t.vocab_size());
    (void)t.decode(ids);
  }
  // The dummy-prefix space has neither piece nor byte token: the unknown token
  // (id 0, an empty piece) stands for it.
  EXPECT_EQ(t.decode(t.encode(std::string(1 << 20, 'a'), false)), std::string(1 << 20, 'a'));
}

}  // namespace
}  // namespace plimsoll
