// ModelConfig: the hyper-parameters of a decoder-only transformer, as read
// from any file format. Plain data shared by model/, kv/ and the planners.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plimsoll {

enum class RopeLayout {
  kInterleaved,  // rotate pairs (x[2i], x[2i+1]): llama2.c, GGUF "llama"
  kHalfSplit,    // rotate pairs (x[i], x[i + d/2]): Hugging Face checkpoints
};

enum class NormKind {
  kRms,    // x / rms(x) * w                  (Llama, Mistral, Qwen2)
  kLayer,  // (x - mean) / std(x) * w + b      (GPT-2, BLOOM)
};

enum class PositionKind {
  kRope,     // rotary embeddings on q and k (rope_layout, rope_theta)
  kLearned,  // absolute position embeddings added to the input (GPT-2's wpe)
  kAlibi,    // per-head linear bias on attention scores (BLOOM)
};

enum class FfnKind {
  kSwiGlu,    // down(silu(gate x) * up x)
  kGeluTanh,  // down(gelu_tanh(up x)): GPT-2's gelu_new, BLOOM's bloom_gelu
};

struct ModelConfig {
  std::string arch = "llama";   // an Architecture's name (formats/architecture.h): llama, mistral, qwen2, qwen3, gpt2, bloom
  std::string name;             // general.name or the file's stem
  int64_t dim = 0;              // embedding width (n_embd)
  int64_t n_layers = 0;
  int64_t n_heads = 0;          // query heads
  int64_t n_kv_heads = 0;       // key/value heads (GQA when < n_heads)
  int64_t ffn_dim = 0;          // feed-forward hidden width
  int64_t vocab_size = 0;
  int64_t max_seq_len = 0;      // context length the model was trained for
  float norm_eps = 1e-5f;       // RMSNorm / LayerNorm epsilon
  float rope_theta = 10000.0f;
  RopeLayout rope_layout = RopeLayout::kInterleaved;
  bool tied_embeddings = false; // output head reuses token_embd.weight

  // What differs between architectures (defaults: Llama).
  NormKind norm = NormKind::kRms;
  PositionKind positions = PositionKind::kRope;
  FfnKind ffn = FfnKind::kSwiGlu;
  bool qkv_bias = false;        // biases on q, k, v (Qwen2, GPT-2, BLOOM)
  bool out_bias = false;        // bias on the attention output projection
  bool ffn_bias = false;        // biases on the feed-forward projections
  bool embed_norm = false;      // LayerNorm after the token embedding (BLOOM)
  bool qk_norm = false;         // RMSNorm of each q and k head before RoPE (Qwen3), weights [head_dim]

  // Set when the head width is not dim / n_heads (config.json head_dim,
  // GGUF attention.key_length): q is then [n_heads * head_dim], not [dim].
  int64_t head_dim_override = 0;
  // RoPE frequency scaling. rope_freq_factors [head_dim / 2]: each rotary
  // frequency is divided by its factor (Llama 3's rope_scaling "llama3", GGUF
  // rope_freqs.weight); empty: none. rope_freq_scale: positions are multiplied
  // by it (rope_scaling "linear": 1 / factor).
  std::vector<float> rope_freq_factors;
  float rope_freq_scale = 1.0f;

  int64_t head_dim() const { return head_dim_override ? head_dim_override : n_heads ? dim / n_heads : 0; }
  int64_t q_dim() const { return n_heads * head_dim(); }
  int64_t kv_dim() const { return n_kv_heads * head_dim(); }
  bool norm_has_bias() const { return norm == NormKind::kLayer; }
};

}  // namespace plimsoll
