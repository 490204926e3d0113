// BLOOM (BloomForCausalLM): LayerNorm on the embeddings and in every block,
// ALiBi positions, fused q/k/v whose rows the checkpoint stores per head
// ([n_heads, 3, hd], reordered on load), biases everywhere, tanh GELU, tied head.
#include "formats/architecture.h"

namespace plimsoll {

// arch_gpt2.cpp: the LayerNorm + GELU family's pieces.
Status check_hf_gelu_tanh(const JsonFile& j, const std::string& field, const std::string& fallback);
ModelConfig gelu_layernorm_switches(const char* name, PositionKind positions, bool embed_norm);
std::vector<TensorSpec> gelu_layernorm_tensors(const char* hf_names[], HfTransform qkv, HfTransform linear);

namespace {

Status bloom_hf_fields(const JsonFile& j, ModelConfig&) {
  PLIMSOLL_ASSIGN(const bool post, j.boolean_or("apply_residual_connection_post_layernorm", false));
  if (post) {
    return make_error(ErrorCode::kUnsupported,
                      j.path + ": field 'apply_residual_connection_post_layernorm' is true; not supported");
  }
  return {};
}

std::vector<TensorSpec> bloom_tensors() {
  static const char* kHf[] = {"input_layernorm.weight", "input_layernorm.bias",
                              "self_attention.query_key_value.weight", "self_attention.query_key_value.bias",
                              "self_attention.dense.weight", "self_attention.dense.bias",
                              "post_attention_layernorm.weight", "post_attention_layernorm.bias",
                              "mlp.dense_h_to_4h.weight", "mlp.dense_h_to_4h.bias",
                              "mlp.dense_4h_to_h.weight", "mlp.dense_4h_to_h.bias"};
  using S = ShapeRule;
  using W = When;
  std::vector<TensorSpec> t = {
      {"token_embd.weight", "word_embeddings.weight", false, S::kVocabByDim, W::kAlways, false, Slot::kTokenEmbd},
      {"token_embd_norm.weight", "word_embeddings_layernorm.weight", false, S::kDim, W::kEmbedNorm, true, Slot::kEmbdNorm},
      {"token_embd_norm.bias", "word_embeddings_layernorm.bias", false, S::kDim, W::kEmbedNorm, true, Slot::kEmbdNormB},
      {"output_norm.weight", "ln_f.weight", false, S::kDim, W::kAlways, true, Slot::kOutputNorm},
      {"output_norm.bias", "ln_f.bias", false, S::kDim, W::kNormBias, true, Slot::kOutputNormB},
      {"output.weight", "", false, S::kVocabByDim, W::kUntied, false, Slot::kOutput},
  };
  for (TensorSpec& s : gelu_layernorm_tensors(kHf, HfTransform::kBloomQkv, HfTransform::kNone)) t.push_back(s);
  return t;
}

HfKeys bloom_hf_keys() {
  HfKeys k;
  k.dim = {{"n_embed", "hidden_size"}, 64, true};
  k.n_layers = {{"num_hidden_layers", "n_layer"}, 2, true};
  k.n_heads = {{"num_attention_heads", "n_head"}, 8, true};
  k.n_kv_heads = {{}, -1.0, true};
  k.ffn_dim_times_dim = 4.0;
  k.vocab_size = {{"vocab_size"}, 250880, true};
  k.max_seq_len = {{"seq_length"}, 2048, true};  // ALiBi has no position table; BLOOM trained on 2048
  k.norm_eps = {{"layer_norm_epsilon"}, 1e-5, true};
  return k;
}

}  // namespace

const Architecture& bloom_architecture() {
  static const Architecture a{
      .name = "bloom",
      .gguf_name = "bloom",
      .hf_model_types = {"bloom"},
      .switches = gelu_layernorm_switches("bloom", PositionKind::kAlibi, true),
      .gguf_rope = RopeLayout::kInterleaved,
      .gguf_eps_key = "attention.layer_norm_epsilon",
      .hf_keys = bloom_hf_keys(),
      .hf_always_tied = true,
      .hf_strip_prefix = "transformer.",
      .hf_layer_prefix = "h.",
      .hf_ignored = {"lm_head.weight"},  // tied to word_embeddings
      .tensors = bloom_tensors(),
      .hf_fields = bloom_hf_fields,
  };
  return a;
}

}  // namespace plimsoll
