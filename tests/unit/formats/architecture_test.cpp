// The architecture descriptions (formats/architecture.h): their tables are
// consistent, and the keys and tensors they add (Llama 3 rope scaling, Qwen2
// and Qwen3 GGUF files, Qwen3's head_dim and qk-norm) load as described.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "formats/architecture.h"
#include "formats/hf_model.h"
#include "formats/model_file.h"
#include "tiny_model.h"

namespace plimsoll {
namespace {

TEST(Architecture, EveryDescriptionIsConsistent) {
  std::set<std::string> names, hf_types;
  for (const Architecture* a : architectures()) {
    EXPECT_TRUE(names.insert(a->name).second) << a->name;
    EXPECT_EQ(a->switches.arch, a->name);
    EXPECT_EQ(architecture_named(a->name), a);
    if (a->gguf_name) {
      EXPECT_EQ(architecture_for_gguf(a->gguf_name), a);
    }
    for (const char* t : a->hf_model_types) {
      EXPECT_TRUE(hf_types.insert(t).second) << t;
      EXPECT_EQ(architecture_for_hf(t), a);
    }
    std::set<std::string> gguf, hf;
    ModelConfig c = a->switches;
    c.n_layers = 3;
    for (const TensorSpec& s : a->tensors) {
      const std::string prefix = s.per_layer ? "blk.1." : "";
      EXPECT_TRUE(gguf.insert(prefix + s.gguf).second) << a->name << ": " << s.gguf;
      if (*s.hf == '\0') continue;
      EXPECT_TRUE(hf.insert(prefix + s.hf).second) << a->name << ": " << s.hf;
      // Every Hugging Face name is found back from its GGUF name (error messages use it).
      const std::string back = hf_tensor_name(c, prefix + s.gguf);
      EXPECT_NE(back.find(s.hf), std::string::npos) << a->name << ": " << s.gguf << " -> " << back;
    }
  }
  EXPECT_EQ(architecture_for_gguf("mistral"), nullptr);  // llama.cpp writes Mistral as "llama"
  EXPECT_EQ(gguf_architecture_names(), "llama, qwen2, qwen3, phi3, gpt2, bloom, gemma2, gemma3");
  EXPECT_EQ(hf_model_type_names(), "llama, mistral, qwen2, qwen3, phi3, gpt2, bloom, gemma2, gemma3_text");
}

TEST(Architecture, ExpectedTensorsFollowTheSwitches) {
  ModelConfig c = qwen3_architecture().switches;
  c.dim = 8;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim_override = 6;  // q is [12, 8], k and v [6, 8]
  c.ffn_dim = 16;
  c.vocab_size = 10;
  c.n_layers = 1;
  c.tied_embeddings = true;
  std::vector<ExpectedTensor> unwanted;
  const auto e = expected_tensors(qwen3_architecture(), c, TensorStore{}, &unwanted);
  auto find = [](const std::vector<ExpectedTensor>& v, const std::string& n) -> const ExpectedTensor* {
    for (const ExpectedTensor& t : v) {
      if (t.name == n) return &t;
    }
    return nullptr;
  };
  ASSERT_TRUE(find(e, "blk.0.attn_q.weight"));
  EXPECT_EQ(find(e, "blk.0.attn_q.weight")->shape, (std::vector<int64_t>{12, 8}));
  EXPECT_EQ(find(e, "blk.0.attn_output.weight")->shape, (std::vector<int64_t>{8, 12}));
  ASSERT_TRUE(find(e, "blk.0.attn_k_norm.weight"));
  EXPECT_EQ(find(e, "blk.0.attn_k_norm.weight")->shape, (std::vector<int64_t>{6}));
  EXPECT_TRUE(find(e, "blk.0.attn_k_norm.weight")->f32);
  EXPECT_FALSE(find(e, "output.weight"));  // tied
  EXPECT_TRUE(find(unwanted, "output.weight"));
  EXPECT_TRUE(find(unwanted, "blk.0.attn_q.bias"));
  EXPECT_FALSE(find(e, "blk.0.attn_qkv.weight"));
}

const std::string kLlamaBase =
    R"("hidden_size": 256, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 16, "vocab_size": 10)";

TEST(Architecture, Llama3RopeScalingFromConfigJson) {
  // Llama 3.1's values on a head of 128: each frequency is kept (short
  // wavelengths), divided by factor (long ones) or smoothly in between.
  const std::string cfg = R"({"model_type": "llama", "rope_theta": 500000.0, "rope_scaling": {"factor": 8.0,
      "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}, )" +
                          kLlamaBase + "}";
  auto c = config_from_hf(*parse_json_text(cfg, "config.json"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->rope_freq_factors.size(), 64u);
  EXPECT_FLOAT_EQ(c->rope_freq_factors.front(), 1.0f);
  EXPECT_FLOAT_EQ(c->rope_freq_factors.back(), 8.0f);
  int smoothed = 0;
  for (size_t i = 1; i < 64; ++i) {
    EXPECT_GE(c->rope_freq_factors[i], c->rope_freq_factors[i - 1]);
    smoothed += c->rope_freq_factors[i] > 1.0f && c->rope_freq_factors[i] < 8.0f;
  }
  EXPECT_GT(smoothed, 0);
  // wavelength 2 pi * 500000^(2i/128) between 2048 and 8192 (smoothed): i = 29..34
  EXPECT_GT(c->rope_freq_factors[30], 1.0f);
  EXPECT_LT(c->rope_freq_factors[30], 8.0f);

  auto linear = config_from_hf(*parse_json_text(
      R"({"model_type": "llama", "rope_scaling": {"type": "linear", "factor": 4.0}, )" + kLlamaBase + "}", "config.json"));
  ASSERT_TRUE(linear.ok()) << linear.error().message;
  EXPECT_FLOAT_EQ(linear->rope_freq_scale, 0.25f);
  EXPECT_TRUE(linear->rope_freq_factors.empty());

  auto missing = config_from_hf(*parse_json_text(
      R"({"model_type": "llama", "rope_scaling": {"rope_type": "llama3", "factor": 8.0}, )" + kLlamaBase + "}", "config.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("field 'rope_scaling.low_freq_factor' is missing"), std::string::npos)
      << missing.error().message;
}

TEST(Architecture, Qwen3ConfigJson) {
  auto c = config_from_hf(*parse_json_text(R"({"model_type": "qwen3", "head_dim": 64, )" + kLlamaBase + "}", "config.json"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->arch, "qwen3");
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->qkv_bias);
  EXPECT_EQ(c->head_dim(), 64);
  EXPECT_EQ(c->q_dim(), 128);
  EXPECT_EQ(c->rope_layout, RopeLayout::kHalfSplit);
  // Qwen3Config's default head_dim is 128, not hidden / heads.
  auto d = config_from_hf(*parse_json_text(R"({"model_type": "qwen3", )" + kLlamaBase + "}", "config.json"));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->head_dim(), 128);
  auto odd = config_from_hf(*parse_json_text(R"({"model_type": "qwen3", "head_dim": 7, )" + kLlamaBase + "}", "config.json"));
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("field 'head_dim'"), std::string::npos) << odd.error().message;
}

TEST(Architecture, Phi3ConfigJson) {
  auto c = config_from_hf(*parse_json_text(R"({"model_type": "phi3", "sliding_window": 2047, "max_position_embeddings": 4096, )" + kLlamaBase + "}", "config.json"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->arch, "phi3");
  EXPECT_EQ(c->max_seq_len, 4096);  // the window masks older positions in every layer, the context stays
  EXPECT_EQ(c->sliding_window, 2047);
  EXPECT_EQ(c->window_of(0), 2047);
  auto partial = config_from_hf(*parse_json_text(R"({"model_type": "phi3", "partial_rotary_factor": 0.75, )" + kLlamaBase + "}", "config.json"));
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.error().message.find("field 'partial_rotary_factor' is 0.75"), std::string::npos) << partial.error().message;
  auto longrope = config_from_hf(*parse_json_text(
      R"({"model_type": "phi3", "rope_scaling": {"type": "longrope", "long_factor": [1], "short_factor": [1]}, )" + kLlamaBase + "}", "config.json"));
  ASSERT_FALSE(longrope.ok());
  EXPECT_NE(longrope.error().message.find("field 'rope_scaling' has type 'longrope'"), std::string::npos)
      << longrope.error().message;
}

// A tiny GGUF of a Llama-family architecture: qwen2 (q/k/v biases), qwen3
// (attn_q_norm / attn_k_norm, key_length 6 with dim 8), llama with rope_freqs.
std::vector<std::byte> family_gguf(const std::string& arch, const std::string& skip = "",
                                   std::vector<int64_t> rope_freqs_shape = {}) {
  testing::TinySpec s;
  s.skip_tensor = skip;
  GgufWriter w;
  const int64_t d = 8, heads = 2, hd = arch == "qwen3" ? 6 : 4, q = heads * hd, kv = hd, f = 16;
  (void)w.set("general.architecture", GgufValue(arch));
  (void)w.set(arch + ".context_length", GgufValue(uint32_t(16)));
  (void)w.set(arch + ".embedding_length", GgufValue(uint32_t(d)));
  (void)w.set(arch + ".feed_forward_length", GgufValue(uint32_t(f)));
  (void)w.set(arch + ".block_count", GgufValue(uint32_t(1)));
  (void)w.set(arch + ".attention.head_count", GgufValue(uint32_t(heads)));
  (void)w.set(arch + ".attention.head_count_kv", GgufValue(uint32_t(1)));
  (void)w.set(arch + ".attention.layer_norm_rms_epsilon", GgufValue(1e-6f));
  (void)w.set(arch + ".rope.freq_base", GgufValue(1e6f));
  if (arch == "qwen3") (void)w.set(arch + ".attention.key_length", GgufValue(uint32_t(hd)));
  int seed = 0;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, bool f32 = false) {
    testing::tiny_add(w, s, name, std::move(shape), f32, seed++);
  };
  add("token_embd.weight", {s.vocab, d});
  add("output_norm.weight", {d}, true);
  if (!rope_freqs_shape.empty()) add("rope_freqs.weight", rope_freqs_shape, true);
  add("blk.0.attn_norm.weight", {d}, true);
  add("blk.0.attn_q.weight", {q, d});
  add("blk.0.attn_k.weight", {kv, d});
  add("blk.0.attn_v.weight", {kv, d});
  if (arch == "qwen2") {
    add("blk.0.attn_q.bias", {q}, true);
    add("blk.0.attn_k.bias", {kv}, true);
    add("blk.0.attn_v.bias", {kv}, true);
  }
  if (arch == "qwen3") {
    add("blk.0.attn_q_norm.weight", {hd}, true);
    add("blk.0.attn_k_norm.weight", {hd}, true);
  }
  add("blk.0.attn_output.weight", {d, q});
  add("blk.0.ffn_norm.weight", {d}, true);
  add("blk.0.ffn_gate.weight", {f, d});
  add("blk.0.ffn_up.weight", {f, d});
  add("blk.0.ffn_down.weight", {d, f});
  return w.to_bytes().value();
}

TEST(Architecture, Qwen2AndQwen3Gguf) {
  auto bytes = family_gguf("qwen2");
  auto m = parse_model({bytes.data(), bytes.size()}, "q2.gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->config.arch, "qwen2");
  EXPECT_TRUE(m->config.qkv_bias);
  EXPECT_TRUE(m->config.tied_embeddings);
  EXPECT_EQ(m->config.rope_layout, RopeLayout::kHalfSplit);  // llama.cpp's NeoX rope for qwen2
  EXPECT_FLOAT_EQ(m->config.rope_theta, 1e6f);

  bytes = family_gguf("qwen3");
  m = parse_model({bytes.data(), bytes.size()}, "q3.gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(m->config.qk_norm);
  EXPECT_EQ(m->config.head_dim(), 6);
  EXPECT_EQ(m->config.q_dim(), 12);

  bytes = family_gguf("qwen3", "blk.0.attn_k_norm.weight");
  m = parse_model({bytes.data(), bytes.size()}, "q3.gguf");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("q3.gguf: missing tensor 'blk.0.attn_k_norm.weight'"), std::string::npos)
      << m.error().message;
  bytes = family_gguf("qwen2", "blk.0.attn_v.bias");
  m = parse_model({bytes.data(), bytes.size()}, "q2.gguf");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("missing tensor 'blk.0.attn_v.bias'"), std::string::npos) << m.error().message;
}

TEST(Architecture, GgufRopeFreqsAreReadIntoTheConfig) {
  auto bytes = family_gguf("llama", "", {2});  // head 4: two frequencies
  auto m = parse_model({bytes.data(), bytes.size()}, "l3.gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m->config.rope_freq_factors.size(), 2u);
  EXPECT_EQ(m->config.rope_layout, RopeLayout::kInterleaved);
  bytes = family_gguf("llama", "", {3});
  m = parse_model({bytes.data(), bytes.size()}, "l3.gguf");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("l3.gguf: tensor 'rope_freqs.weight' must be f32 [2]"), std::string::npos)
      << m.error().message;
}

TEST(Architecture, UnknownGgufArchitectureListsTheKnownOnes) {
  testing::TinySpec s;
  s.arch = "mamba";
  const auto bytes = testing::tiny_llama_gguf(s);
  auto m = parse_model({bytes.data(), bytes.size()}, "m.gguf");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(m.error().message.find("m.gguf: architecture 'mamba' is not supported (llama, qwen2, qwen3, phi3, gpt2, bloom, gemma2, gemma3)"),
            std::string::npos)
      << m.error().message;
}

const std::string kGemmaBase =
    R"("hidden_size": 32, "num_hidden_layers": 7, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16, "intermediate_size": 16, "vocab_size": 10)";

TEST(Architecture, Gemma2ConfigJsonDefaults) {
  auto c = config_from_hf(*parse_json_text(R"({"model_type": "gemma2", )" + kGemmaBase + "}", "config.json"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->arch, "gemma2");
  EXPECT_EQ(c->ffn, FfnKind::kGeGlu);
  EXPECT_TRUE(c->post_norms && c->embed_scale && c->tied_embeddings);
  EXPECT_FALSE(c->qk_norm);
  EXPECT_EQ(c->q_dim(), 64);                          // head_dim 16 x 4 heads != hidden 32
  EXPECT_FLOAT_EQ(c->attention_scale(), 1.0f / 16);   // Gemma2Config: query_pre_attn_scalar 256
  EXPECT_FLOAT_EQ(c->attn_softcap, 50.0f);            // Gemma2Config's defaults
  EXPECT_FLOAT_EQ(c->final_softcap, 30.0f);
  EXPECT_EQ(c->sliding_window, 4096);
  EXPECT_EQ(c->window_of(0), 4096);                   // every other layer from 0 is local
  EXPECT_EQ(c->window_of(1), 0);
  EXPECT_EQ(c->window_of(6), 4096);
  EXPECT_FALSE(c->local_rope(0));                     // one RoPE base for every layer
  auto capped = config_from_hf(*parse_json_text(
      R"({"model_type": "gemma2", "attn_logit_softcapping": null, "final_logit_softcapping": 20, "query_pre_attn_scalar": 144, )" +
          kGemmaBase + "}", "config.json"));
  ASSERT_TRUE(capped.ok()) << capped.error().message;
  EXPECT_EQ(capped->attn_softcap, 0.0f);
  EXPECT_FLOAT_EQ(capped->final_softcap, 20.0f);
  EXPECT_FLOAT_EQ(capped->attention_scale(), 1.0f / 12);
  auto act = config_from_hf(*parse_json_text(R"({"model_type": "gemma2", "hidden_activation": "relu", )" + kGemmaBase + "}", "config.json"));
  ASSERT_FALSE(act.ok());
  EXPECT_NE(act.error().message.find("config.json: field 'hidden_activation' is 'relu'"), std::string::npos) << act.error().message;
}

TEST(Architecture, Gemma3ConfigJsonLayersAndRope) {
  auto c = config_from_hf(*parse_json_text(
      R"({"model_type": "gemma3_text", "sliding_window": 512, "rope_scaling": {"rope_type": "linear", "factor": 8.0}, )" +
          kGemmaBase + "}", "config.json"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->arch, "gemma3");
  EXPECT_TRUE(c->qk_norm);
  EXPECT_EQ(c->attn_softcap, 0.0f);
  EXPECT_EQ(c->final_softcap, 0.0f);
  for (int64_t l = 0; l < 7; ++l) EXPECT_EQ(c->window_of(l), l == 5 ? 0 : 512) << l;  // 5 local : 1 global
  EXPECT_FLOAT_EQ(c->rope_theta, 1e6f);               // Gemma3TextConfig's defaults
  EXPECT_FLOAT_EQ(c->rope_theta_local, 1e4f);
  EXPECT_FLOAT_EQ(c->rope_freq_scale, 0.125f);        // global layers only
  EXPECT_TRUE(c->local_rope(0));
  EXPECT_FALSE(c->local_rope(5));
  auto types = config_from_hf(*parse_json_text(
      R"({"model_type": "gemma3_text", "layer_types": ["full_attention", "sliding_attention"], )" + kGemmaBase + "}",
      "config.json"));
  ASSERT_FALSE(types.ok());
  EXPECT_NE(types.error().message.find("field 'layer_types' must list one type per layer (7)"), std::string::npos)
      << types.error().message;
  auto params = config_from_hf(*parse_json_text(
      R"({"model_type": "gemma3_text", "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}, )" +
          kGemmaBase + "}", "config.json"));
  ASSERT_TRUE(params.ok()) << params.error().message;
  EXPECT_FLOAT_EQ(params->rope_freq_scale, 0.25f);
  EXPECT_FLOAT_EQ(params->rope_theta_local, 1e4f);
  auto bias = config_from_hf(*parse_json_text(R"({"model_type": "gemma3_text", "attention_bias": true, )" + kGemmaBase + "}", "config.json"));
  ASSERT_FALSE(bias.ok());
  EXPECT_EQ(bias.error().code, ErrorCode::kUnsupported);
}

// A one-layer Gemma GGUF as llama.cpp's converter writes it (no output.weight: tied).
std::vector<std::byte> gemma_gguf(const std::string& arch, int64_t layers, bool window_key) {
  testing::TinySpec s;
  GgufWriter w;
  const int64_t d = 8, heads = 2, hd = 6, q = heads * hd, kv = hd, f = 16;
  (void)w.set("general.architecture", GgufValue(arch));
  (void)w.set(arch + ".context_length", GgufValue(uint32_t(16)));
  (void)w.set(arch + ".embedding_length", GgufValue(uint32_t(d)));
  (void)w.set(arch + ".feed_forward_length", GgufValue(uint32_t(f)));
  (void)w.set(arch + ".block_count", GgufValue(uint32_t(layers)));
  (void)w.set(arch + ".attention.head_count", GgufValue(uint32_t(heads)));
  (void)w.set(arch + ".attention.head_count_kv", GgufValue(uint32_t(1)));
  (void)w.set(arch + ".attention.key_length", GgufValue(uint32_t(hd)));
  (void)w.set(arch + ".attention.layer_norm_rms_epsilon", GgufValue(1e-6f));
  if (window_key) (void)w.set(arch + ".attention.sliding_window", GgufValue(uint32_t(3)));
  int seed = 0;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, bool f32 = false) {
    testing::tiny_add(w, s, name, std::move(shape), f32, seed++);
  };
  add("token_embd.weight", {s.vocab, d});
  add("output_norm.weight", {d}, true);
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", {d}, true);
    add(p + "attn_q.weight", {q, d});
    add(p + "attn_k.weight", {kv, d});
    add(p + "attn_v.weight", {kv, d});
    if (arch == "gemma3") {
      add(p + "attn_q_norm.weight", {hd}, true);
      add(p + "attn_k_norm.weight", {hd}, true);
    }
    add(p + "attn_output.weight", {d, q});
    add(p + "post_attention_norm.weight", {d}, true);
    add(p + "ffn_norm.weight", {d}, true);
    add(p + "ffn_gate.weight", {f, d});
    add(p + "ffn_up.weight", {f, d});
    add(p + "ffn_down.weight", {d, f});
    add(p + "post_ffw_norm.weight", {d}, true);
  }
  return w.to_bytes().value();
}

TEST(Architecture, GemmaGgufKeysAsLlamaCppReadsThem) {
  auto bytes = gemma_gguf("gemma2", 2, false);
  auto m = parse_model({bytes.data(), bytes.size()}, "g2.gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->config.arch, "gemma2");
  EXPECT_TRUE(m->config.tied_embeddings);
  EXPECT_EQ(m->config.rope_layout, RopeLayout::kHalfSplit);
  EXPECT_EQ(m->config.sliding_window, 4096);  // llama.cpp's defaults without the keys
  EXPECT_FLOAT_EQ(m->config.attn_softcap, 50.0f);
  EXPECT_FLOAT_EQ(m->config.final_softcap, 30.0f);
  EXPECT_FLOAT_EQ(m->config.attention_scale(), 1.0f / std::sqrt(6.0f));  // 1/sqrt(head_dim)
  EXPECT_EQ(m->config.window_of(0), 4096);
  EXPECT_EQ(m->config.window_of(1), 0);

  bytes = gemma_gguf("gemma3", 7, true);
  m = parse_model({bytes.data(), bytes.size()}, "g3.gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(m->config.qk_norm);
  EXPECT_EQ(m->config.attn_softcap, 0.0f);
  EXPECT_FLOAT_EQ(m->config.rope_theta_local, 10000.0f);
  for (int64_t l = 0; l < 7; ++l) EXPECT_EQ(m->config.window_of(l), l == 5 ? 0 : 3) << l;

  bytes = gemma_gguf("gemma3", 1, false);  // llama.cpp requires gemma3's window
  m = parse_model({bytes.data(), bytes.size()}, "g3.gguf");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("gemma3.attention.sliding_window"), std::string::npos) << m.error().message;
}

}  // namespace
}  // namespace plimsoll
