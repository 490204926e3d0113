// The pieces every architecture's binding is made of (norms, attention with
// split or fused q/k/v, feed-forward); internal to model/.
#pragma once

#include <string>

#include "model/decoder_weights.h"

namespace plimsoll::binding {

// A required f32 vector of `n` elements.
Result<const TensorView*> f32_vector(const TensorStore& t, const std::string& name, int64_t n);
// As above, or null when `wanted` is false; an unwanted tensor present in the
// store is an error (it would be silently ignored otherwise).
Result<const TensorView*> optional_f32_vector(const TensorStore& t, const std::string& name,
                                              int64_t n, bool wanted);
// A required matrix of any dtype with shape [rows, cols].
Result<const TensorView*> matrix(const TensorStore& t, const std::string& name, int64_t rows,
                                 int64_t cols);

// norm weight (+ bias for LayerNorm): "<prefix>.weight", "<prefix>.bias".
Status bind_norm(const ModelConfig& c, const TensorStore& t, const std::string& prefix,
                 const TensorView** weight, const TensorView** bias);
// q/k/v (split attn_q/k/v or fused attn_qkv [d + 2 kv, d], sliced by rows),
// their optional biases, and attn_output (+ bias). `p` is "blk.N.".
Status bind_attention(const ModelConfig& c, const TensorStore& t, const std::string& p,
                      DecoderWeights& w, LayerWeights& lw);
// ffn_gate (SwiGLU), ffn_up, ffn_down and their optional biases.
Status bind_ffn(const ModelConfig& c, const TensorStore& t, const std::string& p,
                LayerWeights& lw);
// Every layer (norms, attention, ffn), output norm and head; token_embd.
Status bind_common(const ModelConfig& c, const TensorStore& t, DecoderWeights& w);
// Checks the head geometry (dim, heads, kv heads, even head_dim for RoPE).
Status check_geometry(const ModelConfig& c);

}  // namespace plimsoll::binding

namespace plimsoll {
// The per-architecture bindings (model/llama.cpp, gpt2.cpp, bloom.cpp).
Result<DecoderWeights> bind_llama_family(const ModelConfig& config, const TensorStore& tensors);
Result<DecoderWeights> bind_gpt2(const ModelConfig& config, const TensorStore& tensors);
Result<DecoderWeights> bind_bloom(const ModelConfig& config, const TensorStore& tensors);
}  // namespace plimsoll
