// Tests of load_model / load_vocab: the stories260K fixtures in both formats,
// tiny generated models, and broken tensor sets and checkpoints.
#include "formats/model_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "formats/llama2c.h"
#include "formats/llama2c_vocab.h"
#include "test_paths.h"
#include "tiny_model.h"

namespace plimsoll {
namespace {

using Bytes = std::vector<std::byte>;
std::span<const std::byte> span_of(const Bytes& b) { return {b.data(), b.size()}; }

void expect_model_error(const Result<LoadedModel>& r, ErrorCode code,
                        std::vector<std::string> parts) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, code) << r.error().message;
  for (const std::string& p : parts) {
    EXPECT_NE(r.error().message.find(p), std::string::npos)
        << "'" << p << "' not in: " << r.error().message;
  }
}

void expect_stories_config(const ModelConfig& c) {
  EXPECT_EQ(c.arch, "llama");
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.ffn_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_seq_len, 512);
  EXPECT_EQ(c.kv_dim(), 32);
  EXPECT_NEAR(c.norm_eps, 1e-5f, 1e-9f);
  EXPECT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.rope_layout, RopeLayout::kInterleaved);
}

TEST(LoadModel, StoriesCheckpoint) {
  auto m = load_model(testing::stories_path("stories260K.bin"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->format, ModelFormat::kLlama2c);
  expect_stories_config(m->config);
  EXPECT_TRUE(m->config.tied_embeddings);
  EXPECT_FALSE(m->vocab.has_value());
  EXPECT_EQ(m->config.name, "stories260K");
  EXPECT_EQ(m->tensors.tensors().size(), 2u + 5u * 9u);
  auto wk = m->tensors.get("blk.4.attn_k.weight", {32, 64});
  ASSERT_TRUE(wk.ok()) << wk.error().message;
  EXPECT_EQ((*wk)->dtype, DType::kF32);
}

// Read into huge pages, the same tensors (same bytes) as mapped, and every
// tensor byte counts as already resident (the plan's runtime base leaves it out).
TEST(LoadModel, HugePageCopyHasTheMappedTensorsAndCountsThemResident) {
  auto mapped = load_model(testing::stories_path("stories260K.gguf"), FileBacking::kMapped);
  auto copied = load_model(testing::stories_path("stories260K.gguf"), FileBacking::kHugePageCopy);
  ASSERT_TRUE(mapped.ok()) << mapped.error().message;
  ASSERT_TRUE(copied.ok()) << copied.error().message;
  EXPECT_EQ(mapped->tensors.resident_copy_bytes(), 0);
  ASSERT_EQ(copied->tensors.total_bytes(), mapped->tensors.total_bytes());
  if (huge_pages_available()) {
    EXPECT_EQ(copied->tensors.resident_copy_bytes(), copied->tensors.total_bytes());
  }
  auto a = mapped->tensors.get("blk.4.attn_k.weight", {32, 64});
  auto b = copied->tensors.get("blk.4.attn_k.weight", {32, 64});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->data, (*b)->data);
  EXPECT_EQ(0, std::memcmp((*a)->data, (*b)->data, static_cast<size_t>((*a)->n_bytes)));
}

TEST(LoadModel, StoriesGguf) {
  auto m = load_model(testing::stories_path("stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->format, ModelFormat::kGguf);
  expect_stories_config(m->config);
  EXPECT_FALSE(m->config.tied_embeddings);  // llama.cpp's converter writes output.weight
  ASSERT_TRUE(m->vocab.has_value());
  const Vocab& v = *m->vocab;
  EXPECT_EQ(v.size(), 512);
  EXPECT_EQ(v.model, "llama");
  EXPECT_EQ(v.pieces[1], "<s>");
  EXPECT_EQ(v.pieces[3], "<0x00>");
  EXPECT_EQ(v.types[0], TokenType::kUnknown);
  EXPECT_EQ(v.types[1], TokenType::kControl);
  EXPECT_EQ(v.types[3], TokenType::kByte);
  EXPECT_EQ(v.bos_id, 1);
  EXPECT_EQ(v.eos_id, 2);
  EXPECT_EQ(v.unk_id, 0);
  EXPECT_EQ(v.pad_id, -1);
  EXPECT_TRUE(v.add_bos);
  EXPECT_FALSE(v.add_eos);
  EXPECT_TRUE(v.add_space_prefix);
}

TEST(LoadModel, BothStoriesFormatsHoldTheSameWeights) {
  auto bin = load_model(testing::stories_path("stories260K.bin"));
  auto gguf = load_model(testing::stories_path("stories260K.gguf"));
  ASSERT_TRUE(bin.ok() && gguf.ok());
  int compared = 0;
  for (const TensorView& g : gguf->tensors.tensors()) {
    const std::string name = g.name == "output.weight" ? "token_embd.weight" : g.name;
    const TensorView* b = bin->tensors.find(name);
    ASSERT_NE(b, nullptr) << name;
    ASSERT_EQ(g.shape, b->shape) << name;
    ASSERT_EQ(g.dtype, DType::kF32);
    ASSERT_EQ(g.n_bytes, b->n_bytes) << name;
    EXPECT_EQ(0, std::memcmp(g.data, b->data, g.n_bytes)) << name << " differs";
    ++compared;
  }
  EXPECT_EQ(compared, 48);
}

TEST(LoadModel, TinyGgufFromMemory) {
  const Bytes b = testing::tiny_llama_gguf();
  auto m = parse_model(span_of(b), "tiny.gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->config.dim, 8);
  EXPECT_EQ(m->config.n_kv_heads, 1);
  EXPECT_EQ(m->config.vocab_size, 8);
  EXPECT_EQ(m->config.name, "tiny");
  EXPECT_FALSE(m->config.tied_embeddings);
  testing::TinySpec tied;
  tied.with_output = false;
  const Bytes t = testing::tiny_llama_gguf(tied);
  auto mt = parse_model(span_of(t), "tied.gguf");
  ASSERT_TRUE(mt.ok()) << mt.error().message;
  EXPECT_TRUE(mt->config.tied_embeddings);
}

TEST(LoadModel, TinyGgufThroughAFile) {
  const std::string dir = testing::make_temp_dir();
  ASSERT_TRUE(testing::tiny_llama_writer().write(dir + "/tiny.gguf").ok());
  auto m = load_model(dir + "/tiny.gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->config.n_layers, 2);
  auto v = load_vocab(dir + "/tiny.gguf", 8);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->pieces[5], "t5");
  EXPECT_FLOAT_EQ(v->scores[5], -5.0f);
  EXPECT_EQ(load_vocab(dir + "/tiny.gguf", 9).error().code, ErrorCode::kInvalidFile);
  std::filesystem::remove_all(dir);
}

TEST(LoadModel, MissingTensor) {
  testing::TinySpec s;
  s.skip_tensor = "blk.1.ffn_up.weight";
  expect_model_error(parse_model(span_of(testing::tiny_llama_gguf(s)), "m.gguf"),
                     ErrorCode::kInvalidFile, {"m.gguf: ", "missing tensor 'blk.1.ffn_up.weight'"});
}

TEST(LoadModel, WrongShape) {
  testing::TinySpec s;
  s.reshape_tensor = "blk.0.attn_k.weight";
  s.reshape = {8, 8};
  expect_model_error(parse_model(span_of(testing::tiny_llama_gguf(s)), "m.gguf"),
                     ErrorCode::kInvalidFile,
                     {"m.gguf: ", "tensor 'blk.0.attn_k.weight' has shape [8, 8], expected [4, 8]"});
}

TEST(LoadModel, NormMustBeF32) {
  testing::TinySpec s;
  s.norm_dtype = DType::kF16;
  expect_model_error(parse_model(span_of(testing::tiny_llama_gguf(s)), "m.gguf"),
                     ErrorCode::kInvalidFile, {"m.gguf: ", "norms must be f32"});
}

TEST(LoadModel, QuantizedWeightsAreAccepted) {
  testing::TinySpec s;
  s.dim = 32;
  s.ffn = 64;
  s.heads = 4;
  s.kv_heads = 2;
  s.weight_dtype = DType::kQ8_0;
  s.reshape_tensor = "blk.0.ffn_down.weight";  // rows of ffn=64: still a block multiple
  s.reshape = {32, 64};
  auto m = parse_model(span_of(testing::tiny_llama_gguf(s)), "q.gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->tensors.find("blk.0.attn_q.weight")->dtype, DType::kQ8_0);
}

// The read-only grid i-quants load as any other weight dtype: rows of 256 (one super-block),
// each tensor's bytes the dtype's row size (the blocks' bytes are whatever tiny_values wrote).
TEST(LoadModel, GridIQuantWeightsAreAccepted) {
  for (DType dtype : {DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ3_XXS, DType::kIQ1_S, DType::kIQ3_S, DType::kIQ2_S,
                      DType::kIQ1_M}) {
    testing::TinySpec s;
    s.dim = 256;
    s.ffn = 256;
    s.heads = 4;
    s.kv_heads = 2;
    s.weight_dtype = dtype;
    auto m = parse_model(span_of(testing::tiny_llama_gguf(s)), "iq.gguf");
    ASSERT_TRUE(m.ok()) << dtype_name(dtype) << ": " << m.error().message;
    for (const char* name : {"blk.0.attn_q.weight", "blk.1.attn_k.weight", "blk.1.ffn_down.weight", "output.weight"}) {
      const TensorView* t = m->tensors.find(name);
      ASSERT_NE(t, nullptr) << name;
      EXPECT_EQ(t->dtype, dtype) << name;
      EXPECT_EQ(t->n_bytes, t->rows() * dtype_row_bytes(dtype, 256)) << dtype_name(dtype) << " " << name;
    }
  }
}

TEST(LoadModel, UnknownArchitectureAndTokenizer) {
  testing::TinySpec a;
  a.arch = "mamba";
  expect_model_error(parse_model(span_of(testing::tiny_llama_gguf(a)), "m.gguf"),
                     ErrorCode::kUnsupported, {"m.gguf: ", "architecture 'mamba'"});
  testing::TinySpec t;
  t.tokenizer = "t5";  // Unigram: not read here
  expect_model_error(parse_model(span_of(testing::tiny_llama_gguf(t)), "m.gguf"),
                     ErrorCode::kUnsupported, {"m.gguf: ", "tokenizer.ggml.model 't5' is not supported (llama, gpt2, bert)"});
  testing::TinySpec g;
  g.tokenizer = "gpt2";  // byte-level BPE needs its merges
  expect_model_error(parse_model(span_of(testing::tiny_llama_gguf(g)), "m.gguf"),
                     ErrorCode::kInvalidFile, {"m.gguf: ", "'tokenizer.ggml.merges' is missing"});
}

TEST(LoadModel, BadHeadGeometry) {
  testing::TinySpec s;
  s.kv_heads = 3;  // 2 heads, 3 kv heads
  expect_model_error(parse_model(span_of(testing::tiny_llama_gguf(s)), "m.gguf"),
                     ErrorCode::kInvalidFile, {"m.gguf: ", "n_kv_heads 3"});
}

TEST(LoadModel, GgufTruncatedEverywhereFailsCleanly) {
  const Bytes good = testing::tiny_llama_gguf();
  for (size_t n = 4; n < good.size(); n += 3) {
    Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    auto r = parse_model(span_of(cut), "cut.gguf");
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidFile) << r.error().message;
    EXPECT_NE(r.error().message.find("cut.gguf: "), std::string::npos);
  }
}

// ---- llama2.c checkpoints ----

TEST(Llama2c, TinyCheckpointMapsToGgufNames) {
  for (bool shared : {true, false}) {
    const Bytes b = testing::tiny_llama2c({}, shared);
    auto m = parse_llama2c_model(span_of(b), "tiny.bin");
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m->config.tied_embeddings, shared);
    EXPECT_EQ(m->tensors.find("output.weight") != nullptr, !shared);
    // token_embd starts right after the header; blk.1.attn_norm follows blk.0's.
    EXPECT_EQ(m->tensors.find("token_embd.weight")->data, b.data() + 28);
    EXPECT_EQ(m->tensors.find("blk.1.attn_norm.weight")->data,
              m->tensors.find("blk.0.attn_norm.weight")->data + 8 * 4);
  }
}

TEST(Llama2c, WrongLengthNamesExpectedAndActual) {
  Bytes b = testing::tiny_llama2c();
  const size_t good = b.size();
  b.resize(good - 4);
  expect_model_error(parse_llama2c_model(span_of(b), "short.bin"), ErrorCode::kInvalidFile,
                     {"short.bin: ", "should be " + std::to_string(good) + " bytes",
                      "but is " + std::to_string(good - 4) + " bytes"});
  b.resize(good + 100);
  expect_model_error(parse_model(span_of(b), "long.bin"), ErrorCode::kInvalidFile,
                     {"long.bin: ", "but is " + std::to_string(good + 100) + " bytes"});
}

TEST(Llama2c, TruncatedEverywhereFailsCleanly) {
  const Bytes good = testing::tiny_llama2c();
  for (size_t n = 0; n < good.size(); n += 5) {
    Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    auto r = parse_model(span_of(cut), "cut.bin");
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidFile) << r.error().message;
    EXPECT_NE(r.error().message.find("cut.bin: "), std::string::npos);
  }
}

TEST(Llama2c, BadHeaderValues) {
  Bytes b = testing::tiny_llama2c();
  auto with = [&](int field, int32_t v) {
    Bytes x = b;
    std::memcpy(x.data() + 4 * field, &v, 4);
    return parse_llama2c_model(span_of(x), "h.bin");
  };
  expect_model_error(with(0, 0), ErrorCode::kInvalidFile, {"h.bin: ", "dim 0"});
  expect_model_error(with(2, -1), ErrorCode::kInvalidFile, {"n_layers -1"});
  expect_model_error(with(4, 3), ErrorCode::kInvalidFile, {"n_kv_heads 3"});
  expect_model_error(with(5, INT32_MIN), ErrorCode::kInvalidFile, {"vocab_size"});
  expect_model_error(with(0, 1 << 24), ErrorCode::kInvalidFile, {"should be"});
  Bytes magic = b;
  std::memcpy(magic.data(), "ak42", 4);
  expect_model_error(parse_llama2c_model(span_of(magic), "v1.bin"), ErrorCode::kUnsupported,
                     {"ak42"});
}

TEST(LoadVocab, Llama2cTokenizerAloneReadsToTheEnd) {
  // tok512.bin does not store its size: every entry to the end of the file.
  auto r = load_vocab(testing::stories_path("tok512.bin"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->size(), 512);
  auto g = load_vocab(testing::stories_path("stories260K.gguf"));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->size(), 512);
  EXPECT_EQ(r->pieces, g->pieces);
  auto t = load_vocab(testing::stories_path("tok512.bin"), 512);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->size(), 512);
  // A file that stops inside an entry is refused, naming the entry.
  const std::string bytes = testing::read_file(testing::stories_path("tok512.bin"));
  auto cut = count_llama2c_vocab_entries(std::string_view(bytes).substr(0, bytes.size() - 1), "cut.bin");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code, ErrorCode::kInvalidFile);
  EXPECT_NE(cut.error().message.find("cut.bin: entry 511"), std::string::npos) << cut.error().message;
  auto whole = count_llama2c_vocab_entries(bytes, "tok512.bin");
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  EXPECT_EQ(*whole, 512);
}

TEST(LoadModel, MissingFileIsIo) {
  auto r = load_model("/nonexistent/x.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kIo);
  EXPECT_NE(r.error().message.find("/nonexistent/x.gguf"), std::string::npos);
}

}  // namespace
}  // namespace plimsoll
