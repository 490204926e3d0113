// Hugging Face folders: config.json per model_type, tensor renames and
// load-time transforms (GPT-2 Conv1D, BLOOM q/k/v order), settings files, errors.
#include "formats/hf_model.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "hf_folder.h"
#include "test_paths.h"

namespace plimsoll {
namespace {

using testing::StTensor;
using testing::gpt2_tensors;
using testing::kGpt2Config;
using testing::iota;

std::vector<StTensor> bloom_tensors() {
  const int64_t d = 4;
  std::vector<StTensor> t = {{"word_embeddings.weight", "F32", {6, d}, iota(6 * d)},
                             {"word_embeddings_layernorm.weight", "F32", {d}, iota(d)},
                             {"word_embeddings_layernorm.bias", "F32", {d}, iota(d)},
                             {"ln_f.weight", "F32", {d}, iota(d)},
                             {"ln_f.bias", "F32", {d}, iota(d)}};
  const std::string p = "h.0.";
  for (const char* n : {"input_layernorm", "post_attention_layernorm"}) {
    t.push_back({p + n + ".weight", "F32", {d}, iota(d)});
    t.push_back({p + n + ".bias", "F32", {d}, iota(d)});
  }
  t.push_back({p + "self_attention.query_key_value.weight", "BF16", {3 * d, d}, iota(3 * d * d, 1.0f)});
  t.push_back({p + "self_attention.query_key_value.bias", "F32", {3 * d}, iota(3 * d, 1.0f)});
  t.push_back({p + "self_attention.dense.weight", "F32", {d, d}, iota(d * d)});
  t.push_back({p + "self_attention.dense.bias", "F32", {d}, iota(d)});
  t.push_back({p + "mlp.dense_h_to_4h.weight", "F32", {4 * d, d}, iota(4 * d * d)});
  t.push_back({p + "mlp.dense_h_to_4h.bias", "F32", {4 * d}, iota(4 * d)});
  t.push_back({p + "mlp.dense_4h_to_h.weight", "F32", {d, 4 * d}, iota(4 * d * d)});
  t.push_back({p + "mlp.dense_4h_to_h.bias", "F32", {d}, iota(d)});
  return t;
}

const char* kBloomConfig = R"({"model_type": "bloom", "hidden_size": 4, "n_head": 2, "n_layer": 1, "vocab_size": 6})";

std::string folder(const std::string& config, const std::vector<StTensor>& tensors) {
  const std::string dir = testing::make_temp_dir();
  testing::write_hf_folder(dir, config, tensors);
  return dir;
}

float at(const TensorView& t, int64_t i) {
  float v = 0;
  std::memcpy(&v, t.data + i * 4, 4);
  return v;
}

void expect_error(const Result<LoadedModel>& r, ErrorCode code, std::vector<std::string> parts) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, code) << r.error().message;
  for (const std::string& p : parts) {
    EXPECT_NE(r.error().message.find(p), std::string::npos) << "'" << p << "' not in: " << r.error().message;
  }
}

TEST(HfModel, Gpt2ConfigAndConv1DTranspose) {
  auto m = load_model(folder(kGpt2Config, gpt2_tensors("F16")));
  ASSERT_TRUE(m.ok()) << m.error().message;
  const ModelConfig& c = m->config;
  EXPECT_EQ(c.arch, "gpt2");
  EXPECT_EQ(m->format, ModelFormat::kHfSafetensors);
  EXPECT_EQ(c.norm, NormKind::kLayer);
  EXPECT_EQ(c.positions, PositionKind::kLearned);
  EXPECT_EQ(c.ffn, FfnKind::kGeluTanh);
  EXPECT_TRUE(c.tied_embeddings && c.qkv_bias && c.out_bias && c.ffn_bias);
  EXPECT_EQ(c.ffn_dim, 8);
  EXPECT_EQ(c.max_seq_len, 8);
  const TensorView* qkv = m->tensors.find("blk.0.attn_qkv.weight");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->shape, (std::vector<int64_t>{12, 4}));
  for (int64_t r = 0; r < 12; ++r) {
    for (int64_t col = 0; col < 4; ++col) EXPECT_FLOAT_EQ(at(*qkv, r * 4 + col), (col * 12 + r) * 0.01f);
  }
  const TensorView* bias = m->tensors.find("blk.0.attn_qkv.bias");  // f16 in the file, widened
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->dtype, DType::kF32);
  EXPECT_FLOAT_EQ(at(*bias, 3), 1.5f);
  EXPECT_EQ(m->tensors.find("blk.0.ffn_down.weight")->shape, (std::vector<int64_t>{4, 8}));
}

TEST(HfModel, ASnapshotOfTheHubCacheIsNamedAfterItsRepo) {
  const std::string dir = testing::make_temp_dir() + "/models--org--tiny/snapshots/0123abcd";
  std::filesystem::create_directories(dir);
  testing::write_hf_folder(dir, kGpt2Config, gpt2_tensors());
  auto m = load_model(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->config.name, "org/tiny");
  EXPECT_EQ(load_model(folder(kGpt2Config, gpt2_tensors()))->config.name.rfind("plimsoll-test-", 0), 0u);
}

TEST(HfModel, TransformerPrefixAndBuffersAreAccepted) {
  auto tensors = gpt2_tensors();
  for (StTensor& t : tensors) t.name = "transformer." + t.name;
  tensors.push_back({"transformer.h.0.attn.bias", "F32", {1, 1, 2, 2}, iota(4)});
  auto m = load_model(folder(kGpt2Config, tensors));
  ASSERT_TRUE(m.ok()) << m.error().message;
}

TEST(HfModel, BloomQkvRowsAreReordered) {
  auto m = load_model(folder(kBloomConfig, bloom_tensors()));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->config.positions, PositionKind::kAlibi);
  EXPECT_TRUE(m->config.embed_norm);
  EXPECT_EQ(m->config.ffn_dim, 16);
  const TensorView* qkv = m->tensors.find("blk.0.attn_qkv.weight");
  const TensorView* bias = m->tensors.find("blk.0.attn_qkv.bias");
  ASSERT_TRUE(qkv && bias);
  EXPECT_EQ(qkv->dtype, DType::kBF16);
  const int64_t heads = 2, hd = 2;
  for (int64_t j = 0; j < 3; ++j) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < hd; ++i) {
        const int64_t dst = (j * heads + h) * hd + i, src = (h * 3 + j) * hd + i;
        EXPECT_FLOAT_EQ(at(*bias, dst), static_cast<float>(src));
        uint16_t first = 0;
        std::memcpy(&first, qkv->row(dst), 2);
        EXPECT_FLOAT_EQ(bf16_to_f32(first), static_cast<float>(src * 4));
      }
    }
  }
}

TEST(HfModel, LlamaFamilyConfigs) {
  const std::string base =
      R"("hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 16, "vocab_size": 10)";
  auto q = config_from_hf(*parse_json_text(R"({"model_type": "qwen2", )" + base + "}", "config.json"));
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_TRUE(q->qkv_bias);
  EXPECT_FALSE(q->out_bias);
  EXPECT_EQ(q->rope_layout, RopeLayout::kHalfSplit);
  EXPECT_EQ(q->max_seq_len, 32768);
  auto mi = config_from_hf(*parse_json_text(R"({"model_type": "mistral", "sliding_window": 4096, )" + base + "}", "config.json"));
  ASSERT_TRUE(mi.ok()) << mi.error().message;
  EXPECT_EQ(mi->max_seq_len, 131072);  // MistralConfig's default: the window does not cap the context
  EXPECT_EQ(mi->sliding_window, 4096);
  EXPECT_EQ(mi->window_of(0), 4096);
  EXPECT_FALSE(mi->qkv_bias);
  auto scaled = config_from_hf(*parse_json_text(R"({"model_type": "llama", "rope_scaling": {"type": "yarn", "factor": 4}, )" + base + "}", "config.json"));
  ASSERT_FALSE(scaled.ok());
  EXPECT_EQ(scaled.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(scaled.error().message.find("config.json: field 'rope_scaling' has type 'yarn'"), std::string::npos)
      << scaled.error().message;
  auto no_factor = config_from_hf(*parse_json_text(R"({"model_type": "llama", "rope_scaling": {"type": "linear"}, )" + base + "}", "config.json"));
  ASSERT_FALSE(no_factor.ok());
  EXPECT_NE(no_factor.error().message.find("config.json: field 'rope_scaling.factor' is missing"), std::string::npos)
      << no_factor.error().message;
}

TEST(HfModel, UnknownArchitectureNamesFileAndField) {
  const std::string dir = folder(R"({"model_type": "mamba", "hidden_size": 4})", gpt2_tensors());
  expect_error(load_model(dir), ErrorCode::kUnsupported, {dir + "/config.json", "field 'model_type'", "'mamba'"});
  const std::string no_type = folder(R"({"hidden_size": 4})", gpt2_tensors());
  expect_error(load_model(no_type), ErrorCode::kInvalidFile, {"config.json", "missing field 'model_type'"});
  const std::string bad_json = folder("{not json", gpt2_tensors());
  expect_error(load_model(bad_json), ErrorCode::kInvalidFile, {"config.json", "not valid JSON"});
  const std::string bad_heads = folder(
      R"({"model_type": "gpt2", "n_embd": 4, "n_head": 3, "n_layer": 1, "n_positions": 8, "vocab_size": 6})",
      gpt2_tensors());
  expect_error(load_model(bad_heads), ErrorCode::kInvalidFile, {"config.json", "field 'n_head'"});
}

TEST(HfModel, TensorsThatDoNotFitTheConfig) {
  auto tensors = gpt2_tensors();
  tensors.push_back({"h.0.attn.extra.weight", "F32", {1}, {1.0f}});
  expect_error(load_model(folder(kGpt2Config, tensors)), ErrorCode::kInvalidFile,
               {"model.safetensors: tensor 'h.0.attn.extra.weight' is not part of a gpt2 model"});
  tensors = gpt2_tensors();
  tensors.pop_back();  // mlp.c_proj.bias
  expect_error(load_model(folder(kGpt2Config, tensors)), ErrorCode::kInvalidFile,
               {"missing tensor 'blk.0.ffn_down.bias'", "(Hugging Face name '[transformer.]h.0.mlp.c_proj.bias')"});
  tensors = gpt2_tensors();
  tensors[6].shape = {3 * 4, 4};  // c_attn stored as [out, in]: transposed it is [4, 12]
  expect_error(load_model(folder(kGpt2Config, tensors)), ErrorCode::kInvalidFile,
               {"tensor 'blk.0.attn_qkv.weight' has shape [4, 12], expected [12, 4]"});
}

TEST(HfModel, UntiedLlamaNeedsItsHead) {
  const std::string cfg =
      R"({"model_type": "llama", "hidden_size": 4, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 6})";
  std::vector<StTensor> t = {{"model.embed_tokens.weight", "F32", {6, 4}, iota(24)},
                             {"model.norm.weight", "F32", {4}, iota(4)}};
  expect_error(load_model(folder(cfg, t)), ErrorCode::kInvalidFile, {"missing tensor 'lm_head.weight'"});
  t.push_back({"lm_head.weight", "F32", {6, 4}, iota(24)});
  expect_error(load_model(folder(cfg, t)), ErrorCode::kInvalidFile,
               {"missing tensor 'blk.0.attn_norm.weight'", "(Hugging Face name 'model.layers.0.input_layernorm.weight')"});
}

TEST(HfModel, SettingsFiles) {
  const std::string dir = folder(kGpt2Config, gpt2_tensors());
  testing::write_text(dir + "/generation_config.json",
                      R"({"eos_token_id": [50256, 7], "temperature": 0.6, "top_k": 20, "do_sample": true})");
  testing::write_text(dir + "/tokenizer_config.json",
                      R"({"bos_token": {"content": "<|endoftext|>", "lstrip": false}, "eos_token": "<eos>",
                          "add_bos_token": false, "model_max_length": 1000000000000000019884624838656,
                          "chat_template": [{"name": "default", "template": "T"}, {"name": "tool_use", "template": "U"}]})");
  auto m = load_model(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_TRUE(m->generation_defaults && m->tokenizer_settings);
  EXPECT_EQ(m->generation_defaults->eos_token_ids, (std::vector<int32_t>{50256, 7}));
  EXPECT_DOUBLE_EQ(*m->generation_defaults->temperature, 0.6);
  EXPECT_EQ(*m->generation_defaults->top_k, 20);
  EXPECT_EQ(*m->tokenizer_settings->bos_token, "<|endoftext|>");
  EXPECT_EQ(*m->tokenizer_settings->eos_token, "<eos>");
  EXPECT_FALSE(*m->tokenizer_settings->add_bos_token);
  EXPECT_FALSE(m->tokenizer_settings->model_max_length.has_value());
  EXPECT_EQ(*m->tokenizer_settings->chat_template, "T");
  EXPECT_EQ(m->tokenizer_settings->named_chat_templates.at("tool_use"), "U");
  testing::write_text(dir + "/generation_config.json", R"({"eos_token_id": "x"})");
  expect_error(load_model(dir), ErrorCode::kInvalidFile, {"generation_config.json: field 'eos_token_id'"});
}

}  // namespace
}  // namespace plimsoll
