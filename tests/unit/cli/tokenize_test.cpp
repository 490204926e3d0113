// `plimsoll tokenize` from a tokenizer alone (no model file read): a llama2.c
// tokenizer.bin, a vocabulary-only GGUF (-m or --tokenizer), a tokenizer.json;
// and with a model, as before.
#include <gtest/gtest.h>

#include "run_command.h"
#include "test_paths.h"

namespace plimsoll {
namespace {

using testing::plimsoll_binary;
using testing::run_command;
using testing::stories_path;

testing::CommandResult tokenize(const std::string& args) {
  return run_command(plimsoll_binary() + " tokenize " + args + " 2>&1");
}

const std::string kVocabs = testing::shared_dir() + "/vocab-tests/";

TEST(Tokenize, TokenizerBinAloneEqualsTheModelsTokenizer) {
  const auto alone = tokenize("--tokenizer " + stories_path("tok512.bin") + " -p 'Once upon a time'");
  const auto with_model = tokenize("-m " + stories_path("stories260K.gguf") + " -p 'Once upon a time'");
  ASSERT_EQ(alone.exit_code, 0) << alone.out;
  ASSERT_EQ(with_model.exit_code, 0) << with_model.out;
  EXPECT_EQ(alone.out, with_model.out);
  EXPECT_EQ(alone.out.substr(0, 2), "1 ");  // BOS
}

TEST(Tokenize, VocabularyOnlyGgufAsModelOrTokenizer) {
  // GPT-2's ids for "Hello world" (Hugging Face tokenizers).
  EXPECT_EQ(tokenize("-m " + kVocabs + "ggml-vocab-gpt-2.gguf -p 'Hello world'").out, "15496 995\n");
  EXPECT_EQ(tokenize("--tokenizer " + kVocabs + "ggml-vocab-gpt-2.gguf -p 'Hello world'").out, "15496 995\n");
  const auto pieces = tokenize("-m " + kVocabs + "ggml-vocab-falcon.gguf --pieces -p 'Hello world'");
  ASSERT_EQ(pieces.exit_code, 0) << pieces.out;
  EXPECT_EQ(pieces.out, "9856\tHello\n1079\t\xC4\xA0world\n");
}

TEST(Tokenize, TokenizerJsonAlone) {
  const std::string json = testing::source_dir() + "/tests/data/hf_tokenizer/gpt2-small/tokenizer.json";
  const auto r = tokenize("--tokenizer " + json + " --no-bos -p 'Hello'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(r.out.empty());
}

TEST(Tokenize, NeitherModelNorTokenizerIsAnError) {
  const auto r = tokenize("-p 'Hello'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("give -m MODEL or --tokenizer FILE"), std::string::npos) << r.out;
  const auto unknown = tokenize("--tokenizer /nonexistent.gguf -p x");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.out.find("/nonexistent.gguf"), std::string::npos) << unknown.out;
}

}  // namespace
}  // namespace plimsoll
