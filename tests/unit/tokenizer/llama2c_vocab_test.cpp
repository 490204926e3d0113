// Tests of the llama2.c tokenizer reader: the real tok512.bin, conversion to
// the Vocab form, and one-line errors for truncated or hostile files.
#include "formats/llama2c_vocab.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "test_paths.h"

namespace plimsoll {
namespace {

void append_i32(std::string* out, int32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }
void append_f32(std::string* out, float v) { out->append(reinterpret_cast<const char*>(&v), 4); }
void append_entry(std::string* out, float score, const std::string& piece) {
  append_f32(out, score);
  append_i32(out, static_cast<int32_t>(piece.size()));
  out->append(piece);
}

// A valid 6-entry file: the three specials, a byte token, " a", "b".
std::string small_file() {
  std::string f;
  append_i32(&f, 6);
  append_entry(&f, 0, "<unk>");
  append_entry(&f, 0, "\n<s>\n");
  append_entry(&f, 0, "\n</s>\n");
  append_entry(&f, 0, "<0x0A>");
  append_entry(&f, -1, " a");
  append_entry(&f, -2, "b");
  return f;
}

TEST(Llama2cVocab, LoadsTok512) {
  Result<Vocab> vocab = load_llama2c_vocab(testing::stories_path("tok512.bin"), 512);
  ASSERT_TRUE(vocab.ok()) << vocab.error().message;
  EXPECT_EQ(vocab->size(), 512);
  EXPECT_EQ(vocab->pieces[0], "<unk>");
  EXPECT_EQ(vocab->types[0], TokenType::kUnknown);
  EXPECT_EQ(vocab->pieces[1], "<s>");
  EXPECT_EQ(vocab->types[1], TokenType::kControl);
  EXPECT_EQ(vocab->pieces[2], "</s>");
  EXPECT_EQ(vocab->types[2], TokenType::kControl);
  EXPECT_EQ(vocab->pieces[3], "<0x00>");
  EXPECT_EQ(vocab->types[3], TokenType::kByte);
  EXPECT_EQ(vocab->pieces[258], "<0xFF>");
  EXPECT_EQ(vocab->types[258], TokenType::kByte);
  EXPECT_EQ(vocab->pieces[259], "\xE2\x96\x81t");  // " t"
  EXPECT_EQ(vocab->types[259], TokenType::kNormal);
  EXPECT_EQ(vocab->scores[260], -1.0f);
  EXPECT_EQ(vocab->bos_id, 1);
  EXPECT_EQ(vocab->eos_id, 2);
  EXPECT_TRUE(vocab->add_bos);
  EXPECT_TRUE(vocab->add_space_prefix);
  EXPECT_EQ(vocab->model, "llama");
}

TEST(Llama2cVocab, ConvertsSmallFile) {
  Result<Vocab> vocab = parse_llama2c_vocab(small_file(), 6, "small.bin");
  ASSERT_TRUE(vocab.ok()) << vocab.error().message;
  EXPECT_EQ(vocab->pieces[4], "\xE2\x96\x81" "a");
  EXPECT_EQ(vocab->types[3], TokenType::kByte);
  EXPECT_EQ(vocab->scores[5], -2.0f);
}

TEST(Llama2cVocab, ReadsFewerEntriesThanTheFileHolds) {
  Result<Vocab> vocab = parse_llama2c_vocab(small_file(), 2, "small.bin");
  ASSERT_TRUE(vocab.ok()) << vocab.error().message;
  EXPECT_EQ(vocab->size(), 2);
  EXPECT_EQ(vocab->eos_id, -1);  // id 2 does not exist
}

void expect_error(const Result<Vocab>& r, ErrorCode code, const std::string& needle) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, code) << r.error().message;
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << "one line: " << r.error().message;
}

TEST(Llama2cVocab, RejectsEveryTruncation) {
  const std::string full = small_file();
  for (size_t n = 0; n < full.size(); ++n) {
    const Result<Vocab> r = parse_llama2c_vocab(full.substr(0, n), 6, "cut.bin");
    ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes";
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidFile);
    EXPECT_EQ(r.error().message.rfind("cut.bin: ", 0), 0u) << r.error().message;
  }
}

TEST(Llama2cVocab, NamesTheEntryOfATruncatedPiece) {
  std::string f = small_file();
  f.resize(f.size() - 1);  // the last piece, "b", loses its byte
  expect_error(parse_llama2c_vocab(f, 6, "cut.bin"), ErrorCode::kInvalidFile, "entry 5 of 6");
}

TEST(Llama2cVocab, RejectsFewerEntriesThanVocabSize) {
  expect_error(parse_llama2c_vocab(small_file(), 7, "few.bin"), ErrorCode::kInvalidFile,
               "few.bin: ");
  expect_error(parse_llama2c_vocab(small_file(), 1000, "few.bin"), ErrorCode::kInvalidFile,
               "1000 entries");
}

TEST(Llama2cVocab, RejectsBadLengths) {
  std::string f;
  append_i32(&f, 4);
  append_entry(&f, 0, "abc");
  append_f32(&f, 0);
  append_i32(&f, -5);
  f.append(16, 'x');
  expect_error(parse_llama2c_vocab(f, 2, "neg.bin"), ErrorCode::kInvalidFile, "entry 1 of 2");

  std::string g;
  append_i32(&g, 2);
  append_entry(&g, 0, "abc");  // 3 > max_token_length 2
  g.append(16, 'x');
  expect_error(parse_llama2c_vocab(g, 1, "long.bin"), ErrorCode::kInvalidFile, "entry 0 of 1");

  std::string h;
  append_i32(&h, 2000000000);
  h.append(64, 'x');
  expect_error(parse_llama2c_vocab(h, 1, "huge.bin"), ErrorCode::kInvalidFile, "max_token_length");
  std::string z;
  append_i32(&z, -1);
  z.append(64, 'x');
  expect_error(parse_llama2c_vocab(z, 1, "neg_max.bin"), ErrorCode::kInvalidFile,
               "max_token_length");
}

TEST(Llama2cVocab, RejectsBadVocabSize) {
  expect_error(parse_llama2c_vocab(small_file(), 0, "zero.bin"), ErrorCode::kInvalidArgument,
               "vocab_size");
  expect_error(parse_llama2c_vocab(small_file(), -3, "neg.bin"), ErrorCode::kInvalidArgument,
               "vocab_size");
  expect_error(parse_llama2c_vocab(small_file(), int64_t{1} << 40, "big.bin"),
               ErrorCode::kInvalidArgument, "vocab_size");
}

TEST(Llama2cVocab, MissingFileIsAnIoError) {
  const Result<Vocab> r = load_llama2c_vocab("/nonexistent/tok.bin", 512);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kIo);
  EXPECT_NE(r.error().message.find("/nonexistent/tok.bin"), std::string::npos);
}

}  // namespace
}  // namespace plimsoll
