// GPT-2 (GPT2LMHeadModel): LayerNorm with biases, learned absolute positions,
// fused q/k/v (c_attn), biases everywhere, tanh GELU, head tied to wte. The
// checkpoint's Conv1D weights are [in, out]: transposed on load.
#include <set>

#include "formats/architecture.h"

namespace plimsoll {

Status check_hf_gelu_tanh(const JsonFile& j, const std::string& field, const std::string& fallback) {
  static const std::set<std::string> kTanh = {"gelu_new", "gelu_pytorch_tanh", "gelu_fast"};
  PLIMSOLL_ASSIGN(const std::string act, j.string_or(field, fallback));
  if (!kTanh.count(act)) {
    return make_error(ErrorCode::kUnsupported, j.path + ": field '" + field + "' is '" + act +
                                                   "', only the tanh GELU (gelu_new) is supported");
  }
  return {};
}

ModelConfig gelu_layernorm_switches(const char* name, PositionKind positions, bool embed_norm) {
  ModelConfig c;
  c.arch = name;
  c.norm = NormKind::kLayer;
  c.ffn = FfnKind::kGeluTanh;
  c.positions = positions;
  c.qkv_bias = c.out_bias = c.ffn_bias = true;
  c.embed_norm = embed_norm;
  return c;
}

// The tensors GPT-2 and BLOOM share (GGUF names; Hugging Face names set by each).
std::vector<TensorSpec> gelu_layernorm_tensors(const char* hf_names[], HfTransform qkv, HfTransform linear) {
  using S = ShapeRule;
  using W = When;
  return {
      {"attn_norm.weight", hf_names[0], true, S::kDim, W::kAlways, true, Slot::kAttnNorm},
      {"attn_norm.bias", hf_names[1], true, S::kDim, W::kNormBias, true, Slot::kAttnNormB},
      {"attn_qkv.weight", hf_names[2], true, S::kQkvByDim, W::kFusedQkv, false, Slot::kQkv, qkv},
      {"attn_qkv.bias", hf_names[3], true, S::kQkv, W::kFusedQkvBias, true, Slot::kBqkv,
       qkv == HfTransform::kBloomQkv ? qkv : HfTransform::kNone},
      {"attn_q.weight", "", true, S::kQByDim, W::kSplitQkv, false, Slot::kQ},
      {"attn_k.weight", "", true, S::kKvByDim, W::kSplitQkv, false, Slot::kK},
      {"attn_v.weight", "", true, S::kKvByDim, W::kSplitQkv, false, Slot::kV},
      {"attn_q.bias", "", true, S::kQ, W::kSplitQkvBias, true, Slot::kBq},
      {"attn_k.bias", "", true, S::kKv, W::kSplitQkvBias, true, Slot::kBk},
      {"attn_v.bias", "", true, S::kKv, W::kSplitQkvBias, true, Slot::kBv},
      {"attn_output.weight", hf_names[4], true, S::kDimByQ, W::kAlways, false, Slot::kWo, linear},
      {"attn_output.bias", hf_names[5], true, S::kDim, W::kOutBias, true, Slot::kBo},
      {"ffn_norm.weight", hf_names[6], true, S::kDim, W::kAlways, true, Slot::kFfnNorm},
      {"ffn_norm.bias", hf_names[7], true, S::kDim, W::kNormBias, true, Slot::kFfnNormB},
      {"ffn_gate.weight", "", true, S::kFfnByDim, W::kGated, false, Slot::kGate},
      {"ffn_up.weight", hf_names[8], true, S::kFfnByDim, W::kAlways, false, Slot::kUp, linear},
      {"ffn_up.bias", hf_names[9], true, S::kFfn, W::kFfnBias, true, Slot::kBUp},
      {"ffn_down.weight", hf_names[10], true, S::kDimByFfn, W::kAlways, false, Slot::kDown, linear},
      {"ffn_down.bias", hf_names[11], true, S::kDim, W::kFfnBias, true, Slot::kBDown},
  };
}

namespace {

Status gpt2_hf_fields(const JsonFile& j, ModelConfig&) {
  PLIMSOLL_TRY(check_hf_gelu_tanh(j, "activation_function", "gelu_new"));
  PLIMSOLL_ASSIGN(const bool scale, j.boolean_or("scale_attn_weights", true));
  if (!scale) {
    return make_error(ErrorCode::kUnsupported,
                      j.path + ": field 'scale_attn_weights' is false; only scaled attention is supported");
  }
  PLIMSOLL_ASSIGN(const bool by_layer, j.boolean_or("scale_attn_by_inverse_layer_idx", false));
  if (by_layer) {
    return make_error(ErrorCode::kUnsupported,
                      j.path + ": field 'scale_attn_by_inverse_layer_idx' is true; not supported");
  }
  return {};
}

std::vector<TensorSpec> gpt2_tensors() {
  static const char* kHf[] = {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                              "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                              "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"};
  using S = ShapeRule;
  using W = When;
  std::vector<TensorSpec> t = {
      {"token_embd.weight", "wte.weight", false, S::kVocabByDim, W::kAlways, false, Slot::kTokenEmbd},
      {"position_embd.weight", "wpe.weight", false, S::kCtxByDim, W::kLearnedPositions, false, Slot::kPositionEmbd},
      {"output_norm.weight", "ln_f.weight", false, S::kDim, W::kAlways, true, Slot::kOutputNorm},
      {"output_norm.bias", "ln_f.bias", false, S::kDim, W::kNormBias, true, Slot::kOutputNormB},
      {"output.weight", "", false, S::kVocabByDim, W::kUntied, false, Slot::kOutput},
  };
  for (TensorSpec& s : gelu_layernorm_tensors(kHf, HfTransform::kTranspose, HfTransform::kTranspose)) t.push_back(s);
  return t;
}

HfKeys gpt2_hf_keys() {
  HfKeys k;
  k.dim = {{"n_embd"}, 768, true};
  k.n_layers = {{"n_layer"}, 12, true};
  k.n_heads = {{"n_head"}, 12, true};
  k.n_kv_heads = {{}, -1.0, true};
  k.ffn_dim = {{"n_inner"}};
  k.ffn_dim_times_dim = 4.0;
  k.vocab_size = {{"vocab_size"}, 50257, true};
  k.max_seq_len = {{"n_positions"}, 1024, true};
  k.norm_eps = {{"layer_norm_epsilon"}, 1e-5, true};
  return k;
}

}  // namespace

const Architecture& gpt2_architecture() {
  static const Architecture a{
      .name = "gpt2",
      .gguf_name = "gpt2",
      .hf_model_types = {"gpt2"},
      .switches = gelu_layernorm_switches("gpt2", PositionKind::kLearned, false),
      .gguf_rope = RopeLayout::kInterleaved,
      .gguf_eps_key = "attention.layer_norm_epsilon",
      .hf_keys = gpt2_hf_keys(),
      .hf_always_tied = true,
      .hf_strip_prefix = "transformer.",
      .hf_layer_prefix = "h.",
      .hf_ignored = {"lm_head.weight", "attn.bias", "attn.masked_bias"},  // tied head; causal-mask buffers
      .tensors = gpt2_tensors(),
      .hf_fields = gpt2_hf_fields,
  };
  return a;
}

}  // namespace plimsoll
