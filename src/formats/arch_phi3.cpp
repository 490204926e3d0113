// Phi-3 (Phi3ForCausalLM; Phi-3-mini and medium with rope_scaling null):
// RMSNorm, half-split RoPE, q/k/v fused in one qkv_proj, gate and up fused
// in one gate_up_proj ([2 f, d], rows [gate; up]), SwiGLU. llama.cpp writes it
// as GGUF "phi3" with the same fusions (attn_qkv, ffn_up of 2 f rows). Its
// sliding window applies to every layer, as Phi3Attention's (llama.cpp reads
// phi3.attention.sliding_window but runs Phi-3 without it); longrope scaling
// and a partial rotary factor are refused.
#include <algorithm>

#include "formats/architecture.h"
#include "formats/gguf.h"

namespace plimsoll {
namespace {

constexpr int64_t kMaxWidth = int64_t{1} << 24;

Status phi3_hf_fields(const JsonFile& j, ModelConfig& c) {
  PLIMSOLL_TRY(read_hf_llama_common(j, c));
  PLIMSOLL_ASSIGN(const double partial, j.number_or("partial_rotary_factor", 1.0));
  if (partial != 1.0) {
    return make_error(ErrorCode::kUnsupported,
                      j.path + ": field 'partial_rotary_factor' is " + std::to_string(partial) + "; only 1 is supported");
  }
  if (j.has("sliding_window")) {
    PLIMSOLL_ASSIGN(c.sliding_window, j.integer("sliding_window", 1, kMaxWidth));
  }
  return {};
}

Status phi3_gguf_fields(const GgufFile& g, ModelConfig& c) {
  if (!g.find("phi3.attention.sliding_window")) return {};
  PLIMSOLL_ASSIGN(const int64_t window, g.get_int("phi3.attention.sliding_window"));
  if (window > 0) c.sliding_window = std::min(window, kMaxWidth);
  return {};
}

std::vector<TensorSpec> phi3_tensors() {
  using S = ShapeRule;
  using W = When;
  return {
      {"token_embd.weight", "model.embed_tokens.weight", false, S::kVocabByDim, W::kAlways, false, Slot::kTokenEmbd},
      {"output_norm.weight", "model.norm.weight", false, S::kDim, W::kAlways, true, Slot::kOutputNorm},
      {"output.weight", "lm_head.weight", false, S::kVocabByDim, W::kUntied, false, Slot::kOutput},
      {"attn_norm.weight", "input_layernorm.weight", true, S::kDim, W::kAlways, true, Slot::kAttnNorm},
      {"attn_qkv.weight", "self_attn.qkv_proj.weight", true, S::kQkvByDim, W::kFusedQkv, false, Slot::kQkv},
      {"attn_q.weight", "", true, S::kQByDim, W::kSplitQkv, false, Slot::kQ},  // llama.cpp accepts both
      {"attn_k.weight", "", true, S::kKvByDim, W::kSplitQkv, false, Slot::kK},
      {"attn_v.weight", "", true, S::kKvByDim, W::kSplitQkv, false, Slot::kV},
      {"attn_output.weight", "self_attn.o_proj.weight", true, S::kDimByQ, W::kAlways, false, Slot::kWo},
      {"ffn_norm.weight", "post_attention_layernorm.weight", true, S::kDim, W::kAlways, true, Slot::kFfnNorm},
      {"ffn_up.weight", "mlp.gate_up_proj.weight", true, S::kGateUpByDim, W::kGated, false, Slot::kGateUp},
      {"ffn_down.weight", "mlp.down_proj.weight", true, S::kDimByFfn, W::kAlways, false, Slot::kDown},
  };
}

}  // namespace

const Architecture& phi3_architecture() {
  static const Architecture a{
      .name = "phi3",
      .gguf_name = "phi3",
      .hf_model_types = {"phi3"},
      .switches = [] { ModelConfig c; c.arch = "phi3"; return c; }(),
      .gguf_rope = RopeLayout::kHalfSplit,
      .gguf_eps_key = "attention.layer_norm_rms_epsilon",
      .hf_keys = llama_family_hf_keys(4096, 1e-5),
      .hf_strip_prefix = "",
      .hf_layer_prefix = "model.layers.",
      .hf_ignored = {"self_attn.rotary_emb.inv_freq"},
      .tensors = phi3_tensors(),
      .hf_fields = phi3_hf_fields,
      .gguf_fields = phi3_gguf_fields,
  };
  return a;
}

}  // namespace plimsoll
