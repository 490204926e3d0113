// ModelConfig: the hyper-parameters of a decoder-only transformer, as read
// from any file format. Plain data shared by model/, kv/ and the planners.
#pragma once

#include <cstdint>
#include <string>

namespace plimsoll {

enum class RopeLayout {
  kInterleaved,  // rotate pairs (x[2i], x[2i+1]): llama2.c, GGUF "llama"
  kHalfSplit,    // rotate pairs (x[i], x[i + d/2]): Hugging Face checkpoints
};

struct ModelConfig {
  std::string arch = "llama";   // "llama" (later "gpt2", "bloom")
  std::string name;             // general.name or the file's stem
  int64_t dim = 0;              // embedding width (n_embd)
  int64_t n_layers = 0;
  int64_t n_heads = 0;          // query heads
  int64_t n_kv_heads = 0;       // key/value heads (GQA when < n_heads)
  int64_t ffn_dim = 0;          // SwiGLU hidden width
  int64_t vocab_size = 0;
  int64_t max_seq_len = 0;      // context length the model was trained for
  float norm_eps = 1e-5f;       // RMSNorm epsilon
  float rope_theta = 10000.0f;
  RopeLayout rope_layout = RopeLayout::kInterleaved;
  bool tied_embeddings = false; // output head reuses token_embd.weight

  int64_t head_dim() const { return n_heads ? dim / n_heads : 0; }
  int64_t kv_dim() const { return n_kv_heads * head_dim(); }
};

}  // namespace plimsoll
