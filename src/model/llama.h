// Llama-family weights bound from a TensorStore, and the plain, unbatched
// reference forward pass (one token at a time), kept forever as the oracle.
#pragma once

#include <cstdint>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"
#include "formats/model_config.h"
#include "formats/tensor_store.h"

namespace plimsoll {

class ThreadPool;

struct LlamaLayerWeights {
  const TensorView* attn_norm;  // [dim] f32
  const TensorView* wq;         // [dim, dim]
  const TensorView* wk;         // [kv_dim, dim]
  const TensorView* wv;         // [kv_dim, dim]
  const TensorView* wo;         // [dim, dim]
  const TensorView* ffn_norm;   // [dim] f32
  const TensorView* w_gate;     // [ffn, dim]
  const TensorView* w_up;       // [ffn, dim]
  const TensorView* w_down;     // [dim, ffn]
};

struct LlamaWeights {
  const TensorView* token_embd;   // [vocab, dim]
  const TensorView* output_norm;  // [dim] f32
  const TensorView* output;       // [vocab, dim] (token_embd when tied)
  std::vector<LlamaLayerWeights> layers;
};

// Checks presence, shapes and dtypes (norms must be f32); errors name the tensor.
Result<LlamaWeights> bind_llama_weights(const ModelConfig& config, const TensorStore& tensors);

// A contiguous KV cache for one sequence, for the reference forward.
struct ReferenceKvCache {
  int64_t max_seq_len = 0;
  int64_t kv_dim = 0;
  std::vector<float> k;  // [n_layers, max_seq_len, kv_dim]
  std::vector<float> v;  // [n_layers, max_seq_len, kv_dim]

  ReferenceKvCache(const ModelConfig& config, int64_t max_seq_len);
  float* k_at(int64_t layer, int64_t pos) { return k.data() + (layer * max_seq_len + pos) * kv_dim; }
  float* v_at(int64_t layer, int64_t pos) { return v.data() + (layer * max_seq_len + pos) * kv_dim; }
};

// The reference forward pass: token at position pos -> logits [vocab].
// Writes this position's keys and values into cache. Allocates its own
// activations (it is the readable oracle, not the hot path).
class LlamaReference {
 public:
  LlamaReference(const ModelConfig& config, LlamaWeights weights);
  const ModelConfig& config() const { return config_; }
  const LlamaWeights& weights() const { return weights_; }

  void forward(int32_t token, int64_t pos, ReferenceKvCache& cache, float* logits,
               ThreadPool* pool = nullptr);

 private:
  void attention(int64_t layer, int64_t pos, ReferenceKvCache& cache);

  ModelConfig config_;
  LlamaWeights weights_;
  // activations, sized once
  std::vector<float> x_, xb_, xb2_, q_, k_, v_, att_, hb_, hb2_;
};

}  // namespace plimsoll
