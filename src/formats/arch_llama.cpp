// Llama (LlamaForCausalLM; Llama 2 and 3.x, SmolLM2) and Mistral
// (MistralForCausalLM): RMSNorm, RoPE, SwiGLU, split q/k/v. llama.cpp's
// converter writes both as GGUF "llama", with q/k rows permuted to the
// interleaved RoPE layout, and Llama 3's rope_scaling as rope_freqs.weight.
#include "formats/architecture.h"

namespace plimsoll {
namespace {

constexpr int64_t kMaxWidth = int64_t{1} << 24;

ModelConfig llama_switches() {
  ModelConfig c;  // the defaults are Llama's: RMSNorm, RoPE, SwiGLU, no biases
  c.arch = "llama";
  return c;
}

// attention_bias (q, k, v and o) and mlp_bias, both false by default.
Status llama_hf_fields(const JsonFile& j, ModelConfig& c) {
  PLIMSOLL_TRY(read_hf_llama_common(j, c));
  PLIMSOLL_ASSIGN(c.qkv_bias, j.boolean_or("attention_bias", false));
  c.out_bias = c.qkv_bias;
  PLIMSOLL_ASSIGN(c.ffn_bias, j.boolean_or("mlp_bias", false));
  return {};
}

// sliding_window: every layer attends to the last `sliding_window` positions
// (MistralAttention); null: full attention.
Status mistral_hf_fields(const JsonFile& j, ModelConfig& c) {
  PLIMSOLL_TRY(read_hf_llama_common(j, c));
  if (j.has("sliding_window")) {
    PLIMSOLL_ASSIGN(c.sliding_window, j.integer("sliding_window", 1, kMaxWidth));
  }
  return {};
}

}  // namespace

const Architecture& llama_architecture() {
  static const Architecture a{
      .name = "llama",
      .gguf_name = "llama",
      .hf_model_types = {"llama"},
      .switches = llama_switches(),
      .gguf_rope = RopeLayout::kInterleaved,
      .gguf_eps_key = "attention.layer_norm_rms_epsilon",
      .hf_keys = llama_family_hf_keys(2048, 1e-6),
      .hf_strip_prefix = "",
      .hf_layer_prefix = "model.layers.",
      .hf_ignored = {"self_attn.rotary_emb.inv_freq"},
      .tensors = llama_family_tensors(),
      .hf_fields = llama_hf_fields,
  };
  return a;
}

const Architecture& mistral_architecture() {
  static const Architecture a{
      .name = "mistral",
      .gguf_name = nullptr,  // convert_hf_to_gguf.py writes MistralForCausalLM as "llama"
      .hf_model_types = {"mistral"},
      .switches = [] { ModelConfig c = llama_switches(); c.arch = "mistral"; return c; }(),
      .gguf_rope = RopeLayout::kInterleaved,
      .gguf_eps_key = "attention.layer_norm_rms_epsilon",
      .hf_keys = llama_family_hf_keys(4096 * 32, 1e-6),
      .hf_strip_prefix = "",
      .hf_layer_prefix = "model.layers.",
      .hf_ignored = {"self_attn.rotary_emb.inv_freq"},
      .tensors = llama_family_tensors(),
      .hf_fields = mistral_hf_fields,
  };
  return a;
}

}  // namespace plimsoll
