// StreamDecoder and UTF-8 helper tests: split multi-byte characters, invalid
// bytes, emoji over four byte tokens, and equality with the lossy decode.
#include "tokenizer/stream_decoder.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "formats/llama2c_vocab.h"
#include "test_paths.h"
#include "tokenizer/utf8.h"

namespace plimsoll {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

const Tokenizer& stories() {
  static const Tokenizer tokenizer = [] {
    Result<Vocab> vocab = load_llama2c_vocab(testing::stories_path("tok512.bin"), 512);
    EXPECT_TRUE(vocab.ok()) << vocab.error().message;
    return std::move(Tokenizer::create(std::move(vocab).value()).value());
  }();
  return tokenizer;
}

std::vector<int32_t> byte_ids(const std::string& bytes) {
  std::vector<int32_t> ids;
  for (const char c : bytes) ids.push_back(stories().byte_token(static_cast<uint8_t>(c)));
  return ids;
}

// Everything the decoder emits for `ids`, one string per push, then finish().
std::vector<std::string> stream(const std::vector<int32_t>& ids, int32_t prev_id = -1) {
  StreamDecoder decoder(stories(), prev_id);
  std::vector<std::string> out;
  for (const int32_t id : ids) out.push_back(decoder.push(id));
  out.push_back(decoder.finish());
  return out;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += p;
  return s;
}

TEST(Utf8, LossyFollowsMaximalSubparts) {
  EXPECT_EQ(utf8_lossy("abc"), "abc");
  EXPECT_EQ(utf8_lossy("é日😀"), "é日😀");
  EXPECT_EQ(utf8_lossy("\xFF"), kFffd);
  EXPECT_EQ(utf8_lossy("\xC0\x80"), kFffd + kFffd);               // overlong lead
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);   // surrogate
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98x"), kFffd + "x");            // cut 4-byte sequence
  EXPECT_EQ(utf8_lossy("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(utf8_lossy("\xE6\x97"), kFffd);                        // truncated tail
  EXPECT_EQ(utf8_lossy(std::string("\0", 1)), std::string("\0", 1));
}

TEST(Utf8, StepKinds) {
  EXPECT_EQ(utf8_step("\xE6\x97", 0).kind, Utf8StepKind::kTruncated);
  EXPECT_EQ(utf8_step("\xE6\x97", 0).length_bytes, 2u);
  EXPECT_EQ(utf8_step("\xE6\x97\xA5", 0).kind, Utf8StepKind::kChar);
  EXPECT_EQ(utf8_step("\x80", 0).kind, Utf8StepKind::kInvalid);
}

TEST(StreamDecoder, EmojiOverFourByteTokens) {
  const std::vector<std::string> out = stream(byte_ids("😀"));
  EXPECT_EQ(out, (std::vector<std::string>{"", "", "", "😀", ""}));
}

TEST(StreamDecoder, TwoByteCharacterSplitAcrossTokens) {
  std::vector<int32_t> ids = stories().encode("café", false);
  const std::vector<std::string> out = stream(ids);
  EXPECT_EQ(joined(out), " café");
  for (const std::string& part : out) EXPECT_EQ(utf8_lossy(part), part) << "emitted invalid UTF-8";
}

TEST(StreamDecoder, InvalidByteBecomesReplacementAtOnce) {
  EXPECT_EQ(stream(byte_ids("a\xFF" "b")), (std::vector<std::string>{"a", kFffd, "b", ""}));
}

TEST(StreamDecoder, SequenceCutByInvalidContinuation) {
  // E6 97 starts a 3-byte character; 'x' cuts it: one U+FFFD, then x.
  EXPECT_EQ(stream(byte_ids("\xE6\x97x")), (std::vector<std::string>{"", "", kFffd + "x", ""}));
}

TEST(StreamDecoder, FinishFlushesAnIncompleteTail) {
  EXPECT_EQ(stream(byte_ids("ok\xF0\x9F\x98")),
            (std::vector<std::string>{"o", "k", "", "", "", kFffd}));
  StreamDecoder decoder(stories());
  EXPECT_EQ(decoder.push(stories().byte_token(0xE6)), "");
  EXPECT_EQ(decoder.pending_bytes(), 1u);
  EXPECT_EQ(decoder.finish(), kFffd);
  EXPECT_EQ(decoder.finish(), "");
}

TEST(StreamDecoder, DropsTheLeadingSpaceAfterBosAndControlTokens) {
  const std::vector<int32_t> ids = stories().encode("Once upon", true);
  const std::vector<std::string> out = stream(ids);
  EXPECT_EQ(joined(out), "Once upon");
  std::vector<int32_t> tail(ids.begin() + 1, ids.end());
  EXPECT_EQ(joined(stream(tail, /*prev_id=*/1)), "Once upon");
  EXPECT_EQ(joined(stream({2})), "");
}

TEST(StreamDecoder, MatchesLossyDecodeOfRandomTokens) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> any_id(0, 511);
  std::uniform_int_distribution<int> coin(0, 3);
  std::uniform_int_distribution<int> byte(0x80, 0xFF);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<int32_t> ids;
    for (int i = 0; i < 30; ++i) {
      // Bias towards high byte tokens so multi-byte sequences form and break.
      ids.push_back(coin(rng) == 0 ? any_id(rng) : stories().byte_token(static_cast<uint8_t>(byte(rng))));
    }
    const std::vector<std::string> out = stream(ids);
    for (const std::string& part : out) ASSERT_EQ(utf8_lossy(part), part);
    ASSERT_EQ(joined(out), utf8_lossy(stories().decode(ids)));
  }
}

}  // namespace
}  // namespace plimsoll
