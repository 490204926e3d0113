// Test helper: a random f32 TensorStore for any ModelConfig (GPT-2, BLOOM,
// Llama-family and Gemma switches), under GGUF names, q/k/v fused or split.
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/model_config.h"
#include "formats/tensor_store.h"

namespace plimsoll::testing {

class RandomDecoder {
 public:
  RandomDecoder(const ModelConfig& c, uint64_t seed, bool fused_qkv) : c_(c), rng_(seed) {
    const int64_t d = c.dim, q = c.q_dim(), kv = c.kv_dim(), f = c.ffn_dim;
    matrix("token_embd.weight", c.vocab_size, d);
    if (c.positions == PositionKind::kLearned) matrix("position_embd.weight", c.max_seq_len, d, 0.3f);
    if (c.embed_norm) norm("token_embd_norm", true);
    norm("output_norm", c.norm_has_bias());
    if (!c.tied_embeddings) matrix("output.weight", c.vocab_size, d);
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      norm(p + "attn_norm", c.norm_has_bias());
      if (fused_qkv) {
        linear(p + "attn_qkv", q + 2 * kv, d, c.qkv_bias);
      } else {
        linear(p + "attn_q", q, d, c.qkv_bias);
        linear(p + "attn_k", kv, d, c.qkv_bias);
        linear(p + "attn_v", kv, d, c.qkv_bias);
      }
      if (c.qk_norm) {
        add(p + "attn_q_norm.weight", {c.head_dim()}, uniform(c.head_dim(), 1.0f, 0.2f));
        add(p + "attn_k_norm.weight", {c.head_dim()}, uniform(c.head_dim(), 1.0f, 0.2f));
      }
      linear(p + "attn_output", d, q, c.out_bias);
      if (c.post_norms) norm(p + "post_attention_norm", false);
      norm(p + "ffn_norm", c.norm_has_bias());
      if (c.ffn_gated()) linear(p + "ffn_gate", f, d, c.ffn_bias);
      linear(p + "ffn_up", f, d, c.ffn_bias);
      linear(p + "ffn_down", d, f, c.ffn_bias);
      if (c.post_norms) norm(p + "post_ffw_norm", false);
    }
  }
  const TensorStore& tensors() const { return store_; }

 private:
  void add(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& v) {
    std::vector<std::byte> bytes(v.size() * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    const int64_t n = static_cast<int64_t>(bytes.size());
    const std::byte* data = store_.adopt(std::move(bytes));
    (void)store_.add(TensorView{name, DType::kF32, std::move(shape), data, n});
  }
  std::vector<float> uniform(int64_t n, float center, float half_width) {
    std::uniform_real_distribution<float> u(center - half_width, center + half_width);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = u(rng_);
    return v;
  }
  void matrix(const std::string& name, int64_t rows, int64_t cols, float scale = 1.0f) {
    add(name, {rows, cols}, uniform(rows * cols, 0.0f, scale * std::sqrt(3.0f / static_cast<float>(cols))));
  }
  void norm(const std::string& prefix, bool bias) {
    add(prefix + ".weight", {c_.dim}, uniform(c_.dim, 1.0f, 0.2f));
    if (bias) add(prefix + ".bias", {c_.dim}, uniform(c_.dim, 0.0f, 0.2f));
  }
  void linear(const std::string& prefix, int64_t rows, int64_t cols, bool bias) {
    matrix(prefix + ".weight", rows, cols);
    if (bias) add(prefix + ".bias", {rows}, uniform(rows, 0.0f, 0.3f));
  }

  ModelConfig c_;
  std::mt19937_64 rng_;
  TensorStore store_;
};

}  // namespace plimsoll::testing
