// Qwen2 / Qwen2.5 (Qwen2ForCausalLM: biases on q, k, v) and Qwen3
// (Qwen3ForCausalLM: RMSNorm of each q and k head, an explicit head_dim).
// llama.cpp writes them as GGUF "qwen2" / "qwen3" with the half-split (NeoX)
// RoPE layout, the checkpoint's own.
#include "formats/architecture.h"

namespace plimsoll {
namespace {

Error unsupported(const JsonFile& j, const std::string& field, const std::string& problem) {
  return make_error(ErrorCode::kUnsupported, j.path + ": field '" + field + "' " + problem);
}

Status no_sliding_window(const JsonFile& j) {
  PLIMSOLL_ASSIGN(const bool sliding, j.boolean_or("use_sliding_window", false));
  if (sliding) return unsupported(j, "use_sliding_window", "is true; sliding-window attention is not supported");
  return {};
}

Status qwen2_hf_fields(const JsonFile& j, ModelConfig& c) {
  PLIMSOLL_TRY(read_hf_llama_common(j, c));
  return no_sliding_window(j);
}

// Qwen3Config: head_dim 128 and attention_bias false unless config.json says.
Status qwen3_hf_fields(const JsonFile& j, ModelConfig& c) {
  if (!j.has("head_dim") && c.dim != 128 * c.n_heads) c.head_dim_override = 128;
  PLIMSOLL_TRY(read_hf_llama_common(j, c));
  PLIMSOLL_ASSIGN(c.qkv_bias, j.boolean_or("attention_bias", false));
  c.out_bias = c.qkv_bias;
  return no_sliding_window(j);
}

ModelConfig qwen_switches(const char* name, bool qkv_bias, bool qk_norm) {
  ModelConfig c;
  c.arch = name;
  c.qkv_bias = qkv_bias;
  c.qk_norm = qk_norm;
  return c;
}

std::vector<TensorSpec> qwen3_tensors() {
  std::vector<TensorSpec> t = llama_family_tensors();
  t.push_back({"attn_q_norm.weight", "self_attn.q_norm.weight", true, ShapeRule::kHeadDim, When::kQkNorm, true,
               Slot::kQNorm});
  t.push_back({"attn_k_norm.weight", "self_attn.k_norm.weight", true, ShapeRule::kHeadDim, When::kQkNorm, true,
               Slot::kKNorm});
  return t;
}

}  // namespace

const Architecture& qwen2_architecture() {
  static const Architecture a{
      .name = "qwen2",
      .gguf_name = "qwen2",
      .hf_model_types = {"qwen2"},
      .switches = qwen_switches("qwen2", true, false),
      .gguf_rope = RopeLayout::kHalfSplit,
      .gguf_eps_key = "attention.layer_norm_rms_epsilon",
      .hf_keys = llama_family_hf_keys(32768, 1e-6),
      .hf_strip_prefix = "",
      .hf_layer_prefix = "model.layers.",
      .hf_ignored = {"self_attn.rotary_emb.inv_freq"},
      .tensors = llama_family_tensors(),
      .hf_fields = qwen2_hf_fields,
  };
  return a;
}

const Architecture& qwen3_architecture() {
  static const Architecture a{
      .name = "qwen3",
      .gguf_name = "qwen3",
      .hf_model_types = {"qwen3"},
      .switches = qwen_switches("qwen3", false, true),
      .gguf_rope = RopeLayout::kHalfSplit,
      .gguf_eps_key = "attention.layer_norm_rms_epsilon",
      .hf_keys = llama_family_hf_keys(32768, 1e-6),
      .hf_strip_prefix = "",
      .hf_layer_prefix = "model.layers.",
      .hf_ignored = {"self_attn.rotary_emb.inv_freq"},
      .tensors = qwen3_tensors(),
      .hf_fields = qwen3_hf_fields,
  };
  return a;
}

}  // namespace plimsoll
