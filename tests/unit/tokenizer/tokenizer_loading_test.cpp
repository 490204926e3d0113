// Which tokenizer a model gets (--tokenizer, the HF folder's tokenizer.json,
// the model file's vocabulary), and GGUF "gpt2" vocabularies on HfTokenizer:
// a GGUF written from a tokenizer.json must give @huggingface/tokenizers' ids.
#include "tokenizer/tokenizer_loading.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/gguf_writer.h"
#include "gguf_from_json.h"
#include "reference_data.h"
#include "test_paths.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace plimsoll {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::read_jsonl;
const fs::path kDataDir = testing::kHfDataDir;

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// convert_hf_to_gguf.py's GGUF for the tokenizer.json in `dir` (with its
// tokenizer_config.json), plus a chat template.
GgufWriter gguf_from_tokenizer_json(const fs::path& dir, const std::string& pre, bool add_bos) {
  GgufWriter w = testing::gguf_from_tokenizer_json(read_json(dir / "tokenizer.json"),
                                                   read_json(dir / "tokenizer_config.json"), pre, add_bos);
  (void)w.set("tokenizer.chat_template", GgufValue(std::string("{{ bos_token }}{{ messages[0]['content'] }}")));
  return w;
}

struct GgufCase {
  const char* family;  // tests/data/hf_tokenizer/<family>-small
  const char* pre;     // tokenizer.ggml.pre
};

class GgufBpeVocab : public ::testing::TestWithParam<GgufCase> {};

TEST_P(GgufBpeVocab, MatchesTheTokenizerJsonReference) {
  const GgufCase& c = GetParam();
  const fs::path dir = kDataDir / (std::string(c.family) + "-small");
  const std::string path = testing::make_temp_dir() + "/vocab.gguf";
  ASSERT_TRUE(gguf_from_tokenizer_json(dir, c.pre, false).write(path).ok());
  auto vocab = load_vocab(path);
  ASSERT_TRUE(vocab.ok()) << vocab.error().message;
  EXPECT_EQ(vocab->model, "gpt2");
  EXPECT_EQ(vocab->pre, c.pre);
  auto tokenizer = tokenizer_from_vocab(*vocab, path);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  const TextTokenizer& t = **tokenizer;
  ASSERT_NE(dynamic_cast<const HfTokenizer*>(&t), nullptr);
  auto reference = HfTokenizer::load_dir(dir.string());
  ASSERT_TRUE(reference.ok()) << reference.error().message;
  EXPECT_EQ(t.vocab_size(), reference->vocab_size());
  EXPECT_EQ(t.eos_id(), reference->eos_id());
  const std::vector<json> corpus = read_jsonl(kDataDir / "corpus.jsonl");
  const std::vector<json> expected = read_jsonl(kDataDir / (std::string(c.family) + "-small.ref.jsonl"));
  ASSERT_EQ(corpus.size(), expected.size());
  int mismatches = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const std::string text = corpus[i].get<std::string>();
    const auto want = expected[i]["ids"].get<std::vector<int32_t>>();
    const auto ids = t.encode(text, false);
    if (ids != want && ++mismatches <= 5) ADD_FAILURE() << c.family << " line " << i << ": " << json(text).dump();
    if (ids == want && t.decode_raw(ids) != reference->decode_raw(ids)) {
      if (++mismatches <= 5) ADD_FAILURE() << c.family << " decode of line " << i;
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << corpus.size() << " lines";
}

INSTANTIATE_TEST_SUITE_P(Families, GgufBpeVocab,
                         ::testing::Values(GgufCase{"gpt2", "gpt-2"}, GgufCase{"llama3", "llama-bpe"},
                                           GgufCase{"qwen2_5", "qwen2"}),
                         [](const ::testing::TestParamInfo<GgufCase>& p) {
                           return std::string(p.param.family) == "qwen2_5" ? std::string("qwen2") : std::string(p.param.family);
                         });

TEST(GgufBpeVocab, AddBosAndUnknownPreTokenizer) {
  const fs::path dir = kDataDir / "llama3-small";
  auto bytes = gguf_from_tokenizer_json(dir, "llama-bpe", true).to_bytes();
  ASSERT_TRUE(bytes.ok());
  auto g = parse_gguf(*bytes, "l3.gguf");
  ASSERT_TRUE(g.ok()) << g.error().message;
  auto vocab = vocab_from_gguf(*g);
  ASSERT_TRUE(vocab.ok() && *vocab) << (vocab.ok() ? "no vocab" : vocab.error().message);
  auto t = tokenizer_from_vocab(**vocab, "l3.gguf");
  ASSERT_TRUE(t.ok()) << t.error().message;
  const auto ids = (*t)->encode("Hello", true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), (*t)->bos_id());
  EXPECT_EQ((*t)->token((*t)->bos_id()), "<|begin_of_text|>");
  EXPECT_EQ((*t)->encode("Hello", false), std::vector<int32_t>(ids.begin() + 1, ids.end()));

  Vocab odd = **vocab;
  odd.pre = "made-up";
  auto bad = tokenizer_from_vocab(odd, "l3.gguf");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kUnsupported);
  // The file, the key, the value and the names known.
  EXPECT_NE(bad.error().message.find("l3.gguf: tokenizer.ggml.pre 'made-up' is not supported (known: default, gpt-2,"),
            std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("deepseek-coder"), std::string::npos) << bad.error().message;
}

// A model as load_model would return it, without tensors.
LoadedModel fake_model(ModelFormat format, const std::string& path, int64_t vocab_size) {
  LoadedModel m;
  m.format = format;
  m.path = path;
  m.config.vocab_size = vocab_size;
  return m;
}

Vocab llama_vocab(int n) {
  Vocab v;
  for (int i = 0; i < n; ++i) {
    std::string piece = std::to_string(i);
    piece.insert(piece.begin(), 't');
    v.pieces.push_back(i == 0 ? "<unk>" : i == 1 ? "<s>" : i == 2 ? "</s>" : piece);
    v.scores.push_back(-static_cast<float>(i));
    v.types.push_back(i == 0 ? TokenType::kUnknown : i < 3 ? TokenType::kControl : TokenType::kNormal);
  }
  return v;
}

// An HF folder with qwen2_5-small's tokenizer.json and a tokenizer_config.json
// carrying `config_extra`.
std::string hf_folder(const json& config_extra) {
  const std::string dir = testing::make_temp_dir();
  fs::copy_file(kDataDir / "qwen2_5-small" / "tokenizer.json", fs::path(dir) / "tokenizer.json");
  json config = read_json(kDataDir / "qwen2_5-small" / "tokenizer_config.json");
  config.update(config_extra);
  write_text(fs::path(dir) / "tokenizer_config.json", config.dump());
  return dir;
}

TEST(TokenizerLoading, HfFolderUsesItsTokenizerJsonAndTemplate) {
  const std::string dir = hf_folder({{"chat_template", "{{ messages }}"}});
  auto t = load_model_tokenizer(fake_model(ModelFormat::kHfSafetensors, dir, 6400), "");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_NE(dynamic_cast<const HfTokenizer*>(t->tokenizer.get()), nullptr);
  EXPECT_EQ(t->source, dir + "/tokenizer.json");
  EXPECT_EQ(t->chat_template, "{{ messages }}");
  EXPECT_NE(t->chat_template_source.find("tokenizer_config.json: chat_template"), std::string::npos);
  EXPECT_EQ(t->eos_token, "<|im_end|>");
  EXPECT_EQ(t->bos_token, "");  // "bos_token": null
  EXPECT_EQ(t->tokenizer->encode("<|im_start|>user", false).front(), 6257);
}

TEST(TokenizerLoading, ChatTemplateJinjaFileAndNamedList) {
  std::string dir = hf_folder(json::object());
  write_text(fs::path(dir) / "chat_template.jinja", "J{{ bos_token }}");
  auto t = load_model_tokenizer(fake_model(ModelFormat::kHfSafetensors, dir, 6400), "");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->chat_template, "J{{ bos_token }}");
  EXPECT_EQ(t->chat_template_source, dir + "/chat_template.jinja");
  dir = hf_folder({{"chat_template", json::array({{{"name", "tool_use"}, {"template", "T"}},
                                                 {{"name", "default"}, {"template", "D"}}})}});
  t = load_model_tokenizer(fake_model(ModelFormat::kHfSafetensors, dir, 6400), "");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->chat_template, "D");
  dir = hf_folder({{"chat_template", json::array({{{"name", "tool_use"}, {"template", "T"}}})}});
  t = load_model_tokenizer(fake_model(ModelFormat::kHfSafetensors, dir, 6400), "");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->chat_template, "");  // no "default": no template for plain chats
}

TEST(TokenizerLoading, TokenizerFlagWinsOverTheFolder) {
  const std::string dir = hf_folder(json::object());
  const std::string gpt2 = (kDataDir / "gpt2-small" / "tokenizer.json").string();
  auto t = load_model_tokenizer(fake_model(ModelFormat::kHfSafetensors, dir, 6400), gpt2);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->source, gpt2);
  EXPECT_EQ(t->tokenizer->vocab_size(), 6257);
  EXPECT_EQ(t->eos_token, "<|endoftext|>");  // gpt2-small's tokenizer_config.json, beside the file

  // A GGUF vocabulary given with --tokenizer for a folder: exact size required.
  const std::string gguf = testing::make_temp_dir() + "/v.gguf";
  ASSERT_TRUE(gguf_from_tokenizer_json(kDataDir / "gpt2-small", "gpt2", false).write(gguf).ok());
  t = load_model_tokenizer(fake_model(ModelFormat::kHfSafetensors, dir, 6257), gguf);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->source, gguf + " (gpt2 vocabulary)");
  EXPECT_EQ(t->chat_template, "");  // only the model's own file gives a GGUF template
}

TEST(TokenizerLoading, GgufVocabularyAndItsTemplate) {
  LoadedModel m = fake_model(ModelFormat::kGguf, "m.gguf", 8);
  m.vocab = llama_vocab(8);
  m.tokenizer_settings = TokenizerSettings{};
  m.tokenizer_settings->chat_template = "{{ bos_token }}x";
  auto t = load_model_tokenizer(m, "");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_NE(dynamic_cast<const Tokenizer*>(t->tokenizer.get()), nullptr);
  EXPECT_EQ(t->source, "m.gguf (llama vocabulary)");
  EXPECT_EQ(t->chat_template, "{{ bos_token }}x");
  EXPECT_EQ(t->chat_template_source, "m.gguf: tokenizer.chat_template");
  EXPECT_EQ(t->bos_token, "<s>");
  EXPECT_EQ(t->eos_token, "</s>");
  // tokenizer.ggml.add_eos_token: EOS ends a prompt encoded with special tokens.
  m.vocab->add_eos = true;
  t = load_model_tokenizer(m, "");
  ASSERT_TRUE(t.ok()) << t.error().message;
  const auto ids = t->tokenizer->encode("t5", true);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(ids.back(), 2);
  EXPECT_EQ(t->tokenizer->encode("t5", false), std::vector<int32_t>(ids.begin() + 1, ids.end() - 1));
}

TEST(TokenizerLoading, ErrorsNameTheFileAndField) {
  // A folder without tokenizer.json.
  auto none = load_model_tokenizer(fake_model(ModelFormat::kHfSafetensors, testing::make_temp_dir(), 10), "");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no tokenizer.json; pass --tokenizer"), std::string::npos);
  // A model file without a vocabulary.
  auto bare = load_model_tokenizer(fake_model(ModelFormat::kLlama2c, "m.bin", 10), "");
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.error().message.find("m.bin: the file carries no vocabulary"), std::string::npos);
  // More ids than the embedding has rows.
  const std::string dir = hf_folder(json::object());
  auto big = load_model_tokenizer(fake_model(ModelFormat::kHfSafetensors, dir, 100), "");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, ErrorCode::kInvalidFile);
  EXPECT_NE(big.error().message.find("tokenizer has 6278 tokens but the model expects at most 100"), std::string::npos)
      << big.error().message;
  // An unsupported model.type.
  json tok = read_json(fs::path(dir) / "tokenizer.json");
  tok["model"]["type"] = "Unigram";
  write_text(fs::path(dir) / "tokenizer.json", tok.dump());
  auto unigram = load_model_tokenizer(fake_model(ModelFormat::kHfSafetensors, dir, 6400), "");
  ASSERT_FALSE(unigram.ok());
  EXPECT_EQ(unigram.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(unigram.error().message.find(dir + "/tokenizer.json: model.type 'Unigram' is not supported"),
            std::string::npos) << unigram.error().message;
}

TEST(TokenizerLoading, AddBosAndEosTokenFlags) {
  const std::string dir = testing::make_temp_dir();
  fs::copy_file(kDataDir / "llama3-small" / "tokenizer.json", fs::path(dir) / "tokenizer.json");
  json config = read_json(kDataDir / "llama3-small" / "tokenizer_config.json");
  config["add_bos_token"] = true;
  config["add_eos_token"] = true;
  write_text(fs::path(dir) / "tokenizer_config.json", config.dump());
  auto t = load_model_tokenizer(fake_model(ModelFormat::kHfSafetensors, dir, 5000), "");
  ASSERT_TRUE(t.ok()) << t.error().message;
  const TextTokenizer& tok = *t->tokenizer;
  const auto plain = tok.encode("Hello world", false);
  auto wrapped = plain;
  wrapped.insert(wrapped.begin(), tok.bos_id());
  wrapped.push_back(tok.eos_id());
  EXPECT_EQ(tok.encode("Hello world", true), wrapped);
  config["add_bos_token"] = false;
  config.erase("add_eos_token");
  write_text(fs::path(dir) / "tokenizer_config.json", config.dump());
  t = load_model_tokenizer(fake_model(ModelFormat::kHfSafetensors, dir, 5000), "");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->tokenizer->encode("Hello world", true), plain);  // llama3-small's post-processor adds nothing
}

}  // namespace
}  // namespace plimsoll
