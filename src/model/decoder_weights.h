// DecoderWeights: the weights of any supported decoder-only architecture
// (Llama, GPT-2, BLOOM) bound from a TensorStore; optional tensors are null.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"
#include "core/model_config.h"
#include "formats/tensor_store.h"

namespace plimsoll {

// Tensor names are GGUF's (llama.cpp) for every architecture; loaders of other
// formats rename to these. Shapes: d = dim, q = q_dim (n_heads * head_dim; d
// unless config.json sets head_dim), kv = kv_dim, f = ffn_dim, hd = head_dim.
struct LayerWeights {
  const TensorView* attn_norm = nullptr;    // [d] f32
  const TensorView* attn_norm_b = nullptr;  // [d] f32, LayerNorm only
  const TensorView* wq = nullptr;           // [q, d]   (a row slice of attn_qkv when fused)
  const TensorView* wk = nullptr;           // [kv, d]
  const TensorView* wv = nullptr;           // [kv, d]
  const TensorView* bq = nullptr;           // [q] f32, optional
  const TensorView* bk = nullptr;           // [kv] f32, optional
  const TensorView* bv = nullptr;           // [kv] f32, optional
  const TensorView* wo = nullptr;           // [d, q]
  const TensorView* bo = nullptr;           // [d] f32, optional
  const TensorView* q_norm = nullptr;       // [hd] f32, qk-norm only (Qwen3)
  const TensorView* k_norm = nullptr;       // [hd] f32, qk-norm only
  const TensorView* attn_post_norm = nullptr;  // [d] f32, post norms only (Gemma 2/3)
  const TensorView* ffn_norm = nullptr;     // [d] f32
  const TensorView* ffn_norm_b = nullptr;   // [d] f32, LayerNorm only
  const TensorView* w_gate = nullptr;       // [f, d], SwiGLU and GeGLU only
  const TensorView* b_gate = nullptr;       // [f] f32, optional (Llama mlp_bias)
  const TensorView* w_up = nullptr;         // [f, d]
  const TensorView* b_up = nullptr;         // [f] f32, optional
  const TensorView* w_down = nullptr;       // [d, f]
  const TensorView* b_down = nullptr;       // [d] f32, optional
  const TensorView* ffn_post_norm = nullptr;   // [d] f32, post norms only
};

struct DecoderWeights {
  const TensorView* token_embd = nullptr;     // [vocab, d]
  const TensorView* position_embd = nullptr;  // [max_seq_len, d], learned positions only
  const TensorView* embd_norm = nullptr;      // [d] f32, BLOOM only
  const TensorView* embd_norm_b = nullptr;    // [d] f32, BLOOM only
  const TensorView* output_norm = nullptr;    // [d] f32
  const TensorView* output_norm_b = nullptr;  // [d] f32, LayerNorm only
  const TensorView* output = nullptr;         // [vocab, d] (token_embd when tied)
  std::vector<LayerWeights> layers;
  // Views the binding made (row slices of fused q/k/v tensors); shared so that
  // copies of this struct keep pointing at live views. Empty when nothing is fused.
  std::shared_ptr<std::deque<TensorView>> slices;
};

// Binds the weights of config.arch through its description
// (formats/architecture.h): checks presence, shapes and dtypes (norms and
// biases must be f32), refuses a tensor the config does not use; errors name the tensor.
Result<DecoderWeights> bind_decoder_weights(const ModelConfig& config, const TensorStore& tensors);

}  // namespace plimsoll
