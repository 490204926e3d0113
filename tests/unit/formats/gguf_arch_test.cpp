// GGUF files of the gpt2 and bloom architectures (llama.cpp's tensor names:
// fused attn_qkv, .bias tensors, position_embd, token_embd_norm) -> ModelConfig.
#include <gtest/gtest.h>

#include "formats/model_file.h"
#include "tiny_model.h"

namespace plimsoll {
namespace {

// A tiny gpt2 or bloom GGUF without a tokenizer; `skip` leaves one tensor out.
std::vector<std::byte> tiny_gguf(const std::string& arch, const std::string& skip = "") {
  testing::TinySpec s;
  s.skip_tensor = skip;
  GgufWriter w;
  (void)w.set("general.architecture", GgufValue(arch));
  (void)w.set(arch + ".context_length", GgufValue(uint32_t(s.ctx)));
  (void)w.set(arch + ".embedding_length", GgufValue(uint32_t(s.dim)));
  (void)w.set(arch + ".feed_forward_length", GgufValue(uint32_t(s.ffn)));
  (void)w.set(arch + ".block_count", GgufValue(uint32_t(1)));
  (void)w.set(arch + ".attention.head_count", GgufValue(uint32_t(s.heads)));
  (void)w.set(arch + ".attention.layer_norm_epsilon", GgufValue(1e-5f));
  const int64_t d = s.dim, f = s.ffn;
  int seed = 0;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    const bool vector = shape.size() == 1;
    testing::tiny_add(w, s, name, std::move(shape), vector, seed++);
  };
  add("token_embd.weight", {s.vocab, d});
  if (arch == "gpt2") add("position_embd.weight", {s.ctx, d});
  if (arch == "bloom") {
    add("token_embd_norm.weight", {d});
    add("token_embd_norm.bias", {d});
  }
  add("output_norm.weight", {d});
  add("output_norm.bias", {d});
  const std::vector<std::pair<std::string, std::vector<int64_t>>> layer = {
      {"attn_norm", {d}}, {"attn_qkv", {3 * d, d}}, {"attn_output", {d, d}},
      {"ffn_norm", {d}},  {"ffn_up", {f, d}},       {"ffn_down", {d, f}}};
  for (const auto& [name, shape] : layer) {
    add("blk.0." + name + ".weight", shape);
    add("blk.0." + name + ".bias", {shape[0]});
  }
  return w.to_bytes().value();
}

TEST(GgufArch, Gpt2) {
  const auto bytes = tiny_gguf("gpt2");
  auto m = parse_model({bytes.data(), bytes.size()}, "g.gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const ModelConfig& c = m->config;
  EXPECT_EQ(c.arch, "gpt2");
  EXPECT_EQ(c.positions, PositionKind::kLearned);
  EXPECT_EQ(c.norm, NormKind::kLayer);
  EXPECT_EQ(c.ffn, FfnKind::kGeluTanh);
  EXPECT_TRUE(c.tied_embeddings && c.qkv_bias && c.out_bias && c.ffn_bias);
  EXPECT_FALSE(m->vocab.has_value());
}

TEST(GgufArch, Bloom) {
  const auto bytes = tiny_gguf("bloom");
  auto m = parse_model({bytes.data(), bytes.size()}, "b.gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->config.positions, PositionKind::kAlibi);
  EXPECT_TRUE(m->config.embed_norm);
}

TEST(GgufArch, MissingBiasOrPositionsNameTheTensor) {
  auto bytes = tiny_gguf("gpt2", "blk.0.attn_qkv.bias");
  auto m = parse_model({bytes.data(), bytes.size()}, "g.gguf");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("g.gguf: missing tensor 'blk.0.attn_qkv.bias'"), std::string::npos)
      << m.error().message;
  bytes = tiny_gguf("gpt2", "position_embd.weight");
  m = parse_model({bytes.data(), bytes.size()}, "g.gguf");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("'position_embd.weight'"), std::string::npos) << m.error().message;
  bytes = tiny_gguf("bloom", "token_embd_norm.bias");
  m = parse_model({bytes.data(), bytes.size()}, "b.gguf");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("'token_embd_norm.bias'"), std::string::npos) << m.error().message;
}

}  // namespace
}  // namespace plimsoll
