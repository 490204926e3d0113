// llama.cpp's tokenizer test vectors (../shared/vocab-tests: a real model's
// vocabulary-only GGUF, texts in .inp, Hugging Face tokenizers' ids in .out)
// through the tokenizer Plimsoll makes of each vocabulary. Where the shared
// folder has no .gguf (llama-bpe, qwen2), the GGUF is written here from a
// tokenizer.json fixture (tests/data/vocab_tests, the part of the real file
// the texts reach, original ids; see tests/reference/make_vocab_fixtures.mjs),
// as llama.cpp's converter would write it, with its tokenizer.ggml.pre.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "formats/model_file.h"
#include "gguf_from_json.h"
#include "reference_data.h"
#include "test_paths.h"
#include "tokenizer/gguf_pre_tokenizers.h"
#include "tokenizer/hf_byte_level.h"
#include "tokenizer/hf_normalizer.h"
#include "tokenizer/hf_pre_tokenizer.h"
#include "tokenizer/tokenizer_loading.h"

namespace plimsoll {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

// The .inp texts (each followed by a separator line) and the .out id lines.
std::vector<Case> read_cases(const fs::path& inp, const fs::path& out) {
  const std::string text = testing::read_file(inp.string());
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<Case> cases;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find(separator, pos);
    if (end == std::string::npos) end = text.size();
    cases.push_back({text.substr(pos, end - pos), {}});
    pos = end + separator.size();
  }
  std::ifstream lines(out);
  for (Case& c : cases) {
    std::string line;
    std::getline(lines, line);
    std::istringstream ids(line);
    for (int32_t id = 0; ids >> id;) c.ids.push_back(id);
  }
  return cases;
}

fs::path vectors_dir() { return fs::path(testing::shared_dir()) / "vocab-tests"; }

struct Vocabulary {
  const char* name;         // llama.cpp's: ggml-vocab-<name>.gguf
  const char* fixture_pre;  // nullptr: the shared .gguf; else tokenizer.ggml.pre for the fixture
};

// The tokenizer of the vocabulary and the file it came from.
Result<std::unique_ptr<TextTokenizer>> load(const Vocabulary& v) {
  std::string path = (vectors_dir() / ("ggml-vocab-" + std::string(v.name) + ".gguf")).string();
  if (v.fixture_pre != nullptr) {
    const fs::path fixture = testing::kTestsDir / "data" / "vocab_tests" / (std::string(v.name) + ".tokenizer.json");
    std::ifstream in(fixture);
    const nlohmann::json tok = nlohmann::json::parse(in);
    path = testing::make_temp_dir() + "/ggml-vocab-" + v.name + ".gguf";
    PLIMSOLL_TRY(testing::gguf_from_tokenizer_json(tok, nlohmann::json::object(), v.fixture_pre, std::nullopt).write(path));
  }
  PLIMSOLL_ASSIGN(const Vocab vocab, load_vocab(path));
  return tokenizer_from_vocab(vocab, path);
}

class VocabVectors : public ::testing::TestWithParam<Vocabulary> {};

TEST_P(VocabVectors, MatchHuggingFaceIds) {
  const Vocabulary& v = GetParam();
  const std::string stem = "ggml-vocab-" + std::string(v.name) + ".gguf";
  const std::vector<Case> cases = read_cases(vectors_dir() / (stem + ".inp"), vectors_dir() / (stem + ".out"));
  ASSERT_GE(cases.size(), 40u) << "the vectors of " << v.name << " under " << vectors_dir();
  auto tokenizer = load(v);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  size_t matched = 0;
  for (const Case& c : cases) {
    const std::vector<int32_t> ids = (*tokenizer)->encode(c.text, /*add_special=*/false);
    if (ids == c.ids) {
      ++matched;
    } else {
      ADD_FAILURE() << v.name << ": " << nlohmann::json(c.text).dump() << " gives "
                    << nlohmann::json(ids).dump() << ", Hugging Face " << nlohmann::json(c.ids).dump();
    }
  }
  std::printf("%s: %zu/%zu cases matched\n", v.name, matched, cases.size());
  EXPECT_EQ(matched, cases.size());
}

INSTANTIATE_TEST_SUITE_P(
    LlamaCpp, VocabVectors,
    ::testing::Values(Vocabulary{"gpt-2", nullptr}, Vocabulary{"llama-spm", nullptr}, Vocabulary{"phi-3", nullptr},
                      Vocabulary{"deepseek-coder", nullptr}, Vocabulary{"deepseek-llm", nullptr},
                      Vocabulary{"falcon", nullptr}, Vocabulary{"mpt", nullptr}, Vocabulary{"refact", nullptr},
                      Vocabulary{"starcoder", nullptr}, Vocabulary{"bert-bge", nullptr},
                      Vocabulary{"llama-bpe", "llama-bpe"}, Vocabulary{"qwen2", "qwen2"}),
    [](const ::testing::TestParamInfo<Vocabulary>& p) {
      std::string name = p.param.name;
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

// Every tokenizer.ggml.pre name: its patterns compile and its pre-tokenizer
// keeps every byte (the words, back from GPT-2's alphabet, join to the text,
// after NFC where the kind normalizes). Names without vectors here (qwen35,
// tekken, gpt-4o, bloom, smollm, command-r, ...) are checked this far.
TEST(VocabVectors, EveryPreTokenizerNameKeepsTheText) {
  const std::vector<Case> cases = read_cases(vectors_dir() / "ggml-vocab-qwen35.gguf.inp",
                                             vectors_dir() / "ggml-vocab-qwen35.gguf.out");
  ASSERT_GE(cases.size(), 40u);
  const std::vector<std::string> names = gguf_pre_tokenizer_names();
  ASSERT_GE(names.size(), 25u);
  for (const std::string& name : names) {
    auto spec = gguf_pre_tokenizer(name, "v.gguf");
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    auto pre = hf::make_pre_tokenizer(spec->pre_tokenizer, name);
    ASSERT_TRUE(pre.ok()) << name << ": " << pre.error().message;
    for (const Case& c : cases) {
      const std::string text = spec->normalizer.is_null() ? c.text : hf::unicode_normalize(c.text, "NFC").value();
      std::vector<hf::PreToken> words = {{text, true}};
      (*pre)->pre_tokenize(&words);
      std::string joined;
      for (const hf::PreToken& w : words) {
        EXPECT_FALSE(w.text.empty()) << name;
        joined += w.text;
      }
      EXPECT_EQ(hf::byte_level_to_bytes(joined), text) << name << ": " << nlohmann::json(c.text).dump();
    }
  }
}

}  // namespace
}  // namespace plimsoll
