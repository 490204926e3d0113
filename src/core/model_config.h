// ModelConfig: the hyper-parameters of a decoder-only transformer (formats/
// fills it from any file format). Plain data shared by model/, kv/, memory/ and the planners.
#pragma once

#include <cmath>
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
  kGeGlu,     // down(gelu_tanh(gate x) * up x): Gemma's gelu_pytorch_tanh
};

struct ModelConfig {
  std::string arch = "llama";   // an Architecture's name (formats/architecture.h): llama, mistral, qwen2, qwen3, phi3, gemma2, gemma3, gpt2, bloom
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
  bool qk_norm = false;         // RMSNorm of each q and k head before RoPE (Qwen3, Gemma 3), weights [head_dim]
  bool post_norms = false;      // RMSNorm of the attention and feed-forward outputs before each residual add (Gemma 2/3)
  bool embed_scale = false;     // token embeddings times sqrt(dim) (Gemma)
  float query_scale = 0.0f;     // attention score scale; 0: 1 / sqrt(head_dim) (Gemma: query_pre_attn_scalar^-1/2)
  float attn_softcap = 0.0f;    // scores -> cap * tanh(scores / cap) before the softmax; 0: none (Gemma 2)
  float final_softcap = 0.0f;   // logits -> cap * tanh(logits / cap); 0: none (Gemma 2)
  // Sliding-window attention: a local layer's query at position p sees keys
  // p - sliding_window + 1 .. p (Hugging Face's and llama.cpp's mask); the KV
  // cache stays full. 0: none. local_layers [n_layers], 1 = local; empty: every
  // layer is local when sliding_window > 0 (Mistral, Phi-3).
  int64_t sliding_window = 0;
  std::vector<uint8_t> local_layers;
  // RoPE base of local layers, which also skip the rope scaling (Gemma 3:
  // 10000 local, rope_theta and rope_scaling global); 0: local layers rotate as global ones.
  float rope_theta_local = 0.0f;

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
  bool ffn_gated() const { return ffn != FfnKind::kGeluTanh; }  // has ffn_gate
  float attention_scale() const {
    return query_scale > 0.0f ? query_scale : 1.0f / std::sqrt(static_cast<float>(head_dim()));
  }
  // The window of `layer` in positions; 0: full attention.
  int64_t window_of(int64_t layer) const {
    if (sliding_window <= 0) return 0;
    if (local_layers.empty()) return sliding_window;
    const auto l = static_cast<size_t>(layer);
    return l < local_layers.size() && local_layers[l] ? sliding_window : 0;
  }
  // Whether `layer` rotates with rope_theta_local and no scaling.
  bool local_rope(int64_t layer) const { return rope_theta_local > 0.0f && window_of(layer) > 0; }
};

}  // namespace plimsoll
