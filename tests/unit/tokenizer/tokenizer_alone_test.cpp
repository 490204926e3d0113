// A tokenizer with no model (load_tokenizer_alone, is_tokenizer_file): a
// tokenizer.json, a vocabulary-only GGUF, a llama2.c tokenizer.bin; and the
// WordPiece tokenizer of GGUF "bert" vocabularies on a hand-made vocabulary.
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/gguf_writer.h"
#include "reference_data.h"
#include "test_paths.h"
#include "tokenizer/tokenizer_loading.h"
#include "tokenizer/wordpiece.h"

namespace plimsoll {
namespace {

namespace fs = std::filesystem;

TEST(TokenizerAlone, Llama2cTokenizerBinEqualsTheModelsVocabulary) {
  auto alone = load_tokenizer_alone(testing::stories_path("tok512.bin"));
  ASSERT_TRUE(alone.ok()) << alone.error().message;
  auto gguf = load_tokenizer_alone(testing::stories_path("stories260K.gguf"));  // a model: tensors unread
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  EXPECT_EQ(alone->tokenizer->vocab_size(), 512);
  const std::string text = "Once upon a time, there was a little girl.";
  EXPECT_EQ(alone->tokenizer->encode(text, true), gguf->tokenizer->encode(text, true));
  EXPECT_EQ(alone->bos_token, "<s>");
  EXPECT_FALSE(is_tokenizer_file(testing::stories_path("stories260K.gguf")));  // has tensors
  EXPECT_FALSE(is_tokenizer_file(testing::stories_path("tok512.bin")));        // not told apart from a model
}

TEST(TokenizerAlone, TokenizerJsonWithItsConfig) {
  const std::string path = (testing::kHfDataDir / "qwen2_5-small" / "tokenizer.json").string();
  EXPECT_TRUE(is_tokenizer_file(path));
  auto t = load_tokenizer_alone(path);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->source, path);
  EXPECT_EQ(t->eos_token, "<|im_end|>");  // tokenizer_config.json beside it
  EXPECT_FALSE(t->tokenizer->encode("Hello world", false).empty());
}

TEST(TokenizerAlone, VocabularyOnlyGguf) {
  const std::string path = (fs::path(testing::shared_dir()) / "vocab-tests" / "ggml-vocab-gpt-2.gguf").string();
  EXPECT_TRUE(is_tokenizer_file(path));
  auto t = load_tokenizer_alone(path);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->source, path + " (gpt2 vocabulary)");
  EXPECT_EQ(t->tokenizer->encode("Hello world", false), (std::vector<int32_t>{15496, 995}));
  EXPECT_EQ(t->eos_token, "<|endoftext|>");
  auto missing = load_tokenizer_alone("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/tokenizer.json"), std::string::npos);
}

// A phantom-space vocabulary as llama.cpp's converter writes BERT's.
Vocab bert_vocab() {
  Vocab v;
  v.model = "bert";
  const std::vector<std::pair<std::string, TokenType>> pieces = {
      {"[PAD]", TokenType::kControl}, {"[UNK]", TokenType::kControl}, {"[CLS]", TokenType::kControl},
      {"[SEP]", TokenType::kControl}, {"\xE2\x96\x81hello", TokenType::kNormal}, {"\xE2\x96\x81un", TokenType::kNormal},
      {"aff", TokenType::kNormal},    {"able", TokenType::kNormal},   {"\xE2\x96\x81,", TokenType::kNormal},
      {"\xE2\x96\x81" "cafe", TokenType::kNormal}, {"\xE2\x96\x81\xE4\xB8\xAD", TokenType::kNormal},  // 中
      {"[unused0]", TokenType::kNormal},
  };
  for (const auto& [piece, type] : pieces) {
    v.pieces.push_back(piece);
    v.types.push_back(type);
  }
  v.unk_id = 1;
  v.bos_id = 2;
  v.eos_id = 3;
  v.pad_id = 0;
  v.add_bos = true;
  v.add_eos = true;
  return v;
}

TEST(WordPiece, LongestPiecesFirstAndUnknownWords) {
  auto t = WordPieceTokenizer::create(bert_vocab(), "b.gguf");
  ASSERT_TRUE(t.ok()) << t.error().message;
  // Lowercased, accents stripped, punctuation split off, CJK spaced out.
  EXPECT_EQ(t->encode("Hello, UNAFFABLE Café中", false), (std::vector<int32_t>{4, 8, 5, 6, 7, 9, 10}));
  // A word with no split is one [UNK]; control names in the text are their tokens.
  EXPECT_EQ(t->encode("hello xyz [SEP]", true), (std::vector<int32_t>{2, 4, 1, 3, 3}));
  EXPECT_EQ(t->encode(std::string(101, 'a'), false), (std::vector<int32_t>{1}));
  EXPECT_EQ(t->decode(std::vector<int32_t>{2, 4, 8, 5, 6, 7, 3}), "hello , unaffable");
  EXPECT_EQ(t->piece_string(-1, 4), " hello");  // as a SentencePiece piece: /tokenize drops a space the text lacks
  EXPECT_EQ(t->piece_string(2, 4), "hello");    // after [CLS]
  EXPECT_EQ(t->piece_string(5, 6), "aff");
  EXPECT_TRUE(t->is_special(2));
  EXPECT_FALSE(t->is_special(4));
}

TEST(WordPiece, RefusesAnUnknownIdOutsideTheVocabulary) {
  Vocab v = bert_vocab();
  v.unk_id = 99;
  auto t = WordPieceTokenizer::create(v, "b.gguf");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("b.gguf: the unknown token id 99"), std::string::npos) << t.error().message;
}

}  // namespace
}  // namespace plimsoll
