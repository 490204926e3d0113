// bind_decoder_weights reads the architecture description: a tensor the
// config does not use is refused by name, a missing one is named, and an
// unknown architecture is an error.
#include <gtest/gtest.h>

#include "convert/random_model.h"
#include "formats/model_file.h"
#include "model/decoder_weights.h"

namespace plimsoll {
namespace {

ModelConfig tiny_config() {
  ModelConfig c;
  c.dim = 8;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.ffn_dim = 16;
  c.vocab_size = 300;
  c.max_seq_len = 16;
  return c;
}

TEST(Binding, UnusedMissingAndUnknownTensors) {
  auto m = random_llama_in_memory(tiny_config(), DType::kF32, 7);
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_TRUE(bind_decoder_weights(m->config, m->tensors).ok());

  std::vector<std::byte> bias(8 * 4);
  ASSERT_TRUE(m->tensors.add(TensorView{"blk.0.attn_q.bias", DType::kF32, {8}, bias.data(), 32}).ok());
  auto w = bind_decoder_weights(m->config, m->tensors);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("tensor 'blk.0.attn_q.bias' is present but the config does not use it"),
            std::string::npos)
      << w.error().message;

  ModelConfig with_bias = m->config;
  with_bias.qkv_bias = true;  // q has its bias now, k and v do not
  w = bind_decoder_weights(with_bias, m->tensors);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("blk.0.attn_k.bias"), std::string::npos) << w.error().message;

  ModelConfig unknown = m->config;
  unknown.arch = "mamba";
  w = bind_decoder_weights(unknown, m->tensors);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace plimsoll
