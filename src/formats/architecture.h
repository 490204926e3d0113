// Architecture: one description per supported decoder architecture (its
// config keys in GGUF and config.json, its layer switches, and its tensors with
// shapes, GGUF names and Hugging Face names). The GGUF and safetensors loaders,
// the tensor check (validate_decoder_tensors) and the weight binding
// (model/weight_binding.cpp) all read these tables: adding an architecture is
// one arch_<name>.cpp plus a line in architecture.cpp's registry (and tests).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "formats/json_file.h"
#include "core/model_config.h"
#include "formats/tensor_store.h"

namespace plimsoll {

struct GgufFile;

// A tensor's shape as a function of the config: d = dim, q = n_heads * head_dim,
// kv = kv_dim, f = ffn_dim, hd = head_dim, V = vocab, T = max_seq_len.
enum class ShapeRule {
  kVocabByDim,  // [V, d]
  kCtxByDim,    // [T, d]
  kDim,         // [d]
  kQByDim,      // [q, d]
  kKvByDim,     // [kv, d]
  kQkvByDim,    // [q + 2 kv, d]   fused q/k/v rows [q; k; v]
  kDimByQ,      // [d, q]
  kFfnByDim,    // [f, d]
  kDimByFfn,    // [d, f]
  kGateUpByDim, // [2 f, d]        fused gate and up rows [gate; up] (Phi-3)
  kQ,           // [q]
  kKv,          // [kv]
  kQkv,         // [q + 2 kv]
  kFfn,         // [f]
  kHeadDim,     // [hd]            per-head norms (Qwen3's q_norm / k_norm)
  kHalfHeadDim, // [hd / 2]        rope_freqs (Llama 3 frequency factors)
};

// When a tensor is part of a model (evaluated on the config and, for q/k/v,
// on whether the file stores them fused).
enum class When {
  kAlways,
  kUntied,            // the output head (else token_embd is reused)
  kNormBias,          // LayerNorm biases
  kSplitQkv,          // attn_q / attn_k / attn_v
  kFusedQkv,          // attn_qkv
  kSplitQkvBias,
  kFusedQkvBias,
  kOutBias,
  kGated,             // ffn_gate (SwiGLU)
  kGatedBias,
  kFfnBias,
  kLearnedPositions,  // position_embd
  kEmbedNorm,         // token_embd_norm (BLOOM)
  kQkNorm,            // attn_q_norm / attn_k_norm (Qwen3)
  kRopeFreqs,         // rope_freqs (GGUF Llama 3: read into the config, not bound)
  kPostNorms,         // post_attention_norm / post_ffw_norm (Gemma 2/3)
};

// Where the binding puts a tensor (model/decoder_weights.h).
enum class Slot {
  kTokenEmbd, kPositionEmbd, kEmbdNorm, kEmbdNormB, kOutputNorm, kOutputNormB, kOutput,
  kAttnNorm, kAttnNormB, kQ, kK, kV, kQkv, kBq, kBk, kBv, kBqkv, kWo, kBo, kQNorm, kKNorm,
  kFfnNorm, kFfnNormB, kGate, kBGate, kUp, kBUp, kGateUp, kDown, kBDown, kAttnPostNorm, kFfnPostNorm, kNone,
};

// How a Hugging Face tensor becomes the GGUF one.
enum class HfTransform {
  kNone,
  kTranspose,  // GPT-2's Conv1D weights are [in, out]
  kBloomQkv,   // BLOOM's fused rows [n_heads, 3, hd] -> [3, n_heads, hd]
  kPlusOne,    // Gemma's RMSNorm scales by (1 + w): stored w -> 1 + w (as llama.cpp's converter writes it)
};

struct TensorSpec {
  const char* gguf;     // GGUF name; per-layer ones without the "blk.N." prefix
  const char* hf;       // Hugging Face name after the layer prefix; "" when none
  bool per_layer;
  ShapeRule shape;
  When when;
  bool f32;             // norms, biases and factors must be f32
  Slot slot;
  HfTransform transform = HfTransform::kNone;
};

// One config.json field (the first of `names` present is read; nullptr ends
// the list) and its Hugging Face default; required when has_fallback is false.
struct HfKey {
  const char* names[3] = {nullptr, nullptr, nullptr};
  double fallback = 0.0;
  bool has_fallback = false;
};

struct HfKeys {
  HfKey dim, n_layers, n_heads, n_kv_heads, ffn_dim, vocab_size, max_seq_len, norm_eps;
  double ffn_dim_times_dim = 0.0;  // ffn_dim absent and no fallback: this * dim (GPT-2, BLOOM)
};

struct Architecture {
  const char* name;             // ModelConfig::arch
  const char* gguf_name;        // general.architecture, or nullptr (llama.cpp writes another)
  std::vector<const char*> hf_model_types;
  ModelConfig switches;         // the layer switches (norm, positions, ffn, biases, ...) set
  RopeLayout gguf_rope = RopeLayout::kInterleaved;
  const char* gguf_eps_key;     // "<gguf_name>." + this
  HfKeys hf_keys;
  bool hf_always_tied = false;  // the head is the embedding whatever config.json says
  const char* hf_strip_prefix;  // "transformer." (GPT-2's LM-head checkpoints) or ""
  const char* hf_layer_prefix;  // "model.layers." or "h."
  std::vector<const char*> hf_ignored;  // per-layer buffers some checkpoints carry
  std::vector<TensorSpec> tensors;
  // Fields only this architecture reads (activation, rope_scaling, sliding
  // window...), after the keys above; errors name the file and the field.
  Status (*hf_fields)(const JsonFile& config, ModelConfig& c) = nullptr;
  // GGUF keys only this architecture reads; may be null.
  Status (*gguf_fields)(const GgufFile& gguf, ModelConfig& c) = nullptr;
};

// Every supported architecture, and the lookups (nullptr when unknown).
std::span<const Architecture* const> architectures();
const Architecture* architecture_named(const std::string& name);
const Architecture* architecture_for_gguf(const std::string& general_architecture);
const Architecture* architecture_for_hf(const std::string& model_type);
// "llama, qwen2, ..." of the GGUF names or the Hugging Face model types, for errors.
std::string gguf_architecture_names();
std::string hf_model_type_names();

// The shape a rule gives for this config.
std::vector<int64_t> shape_of(ShapeRule rule, const ModelConfig& c);
// Whether a tensor is part of this model; `fused_qkv`: the file stores attn_qkv.
bool tensor_wanted(When when, const ModelConfig& c, bool fused_qkv);

// One tensor the config needs, with its full GGUF name.
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
  bool f32 = false;
  Slot slot = Slot::kNone;
  int64_t layer = -1;  // -1: not per layer
};
// Every tensor of the model, in the description's order (top level, then each
// layer). The fused/split q/k/v choice follows `tensors` (a layer with
// blk.N.attn_qkv.weight is fused). `unwanted` (optional) gets the tensors the
// description names but this config does not use (an unused bias, ...).
std::vector<ExpectedTensor> expected_tensors(const Architecture& a, const ModelConfig& c,
                                             const TensorStore& tensors,
                                             std::vector<ExpectedTensor>* unwanted = nullptr);

// The shared Llama-family tensors (RMSNorm, split or fused q/k/v with optional
// biases, SwiGLU, optional head), Hugging Face names of LlamaForCausalLM.
std::vector<TensorSpec> llama_family_tensors();
// Llama-family config.json keys with `max_pos` the class's default context.
HfKeys llama_family_hf_keys(double max_pos, double eps);
// Reads rope_scaling ("llama3" and "linear"; null or absent: none) into c;
// other types are an error naming the field.
Status read_hf_rope_scaling(const JsonFile& j, ModelConfig& c);
// hidden_act must be silu; head_dim, when present, sets c.head_dim_override.
Status read_hf_llama_common(const JsonFile& j, ModelConfig& c);

// The registry's entries (one file each: arch_llama.cpp, arch_qwen.cpp, ...).
const Architecture& llama_architecture();
const Architecture& mistral_architecture();
const Architecture& qwen2_architecture();
const Architecture& qwen3_architecture();
const Architecture& phi3_architecture();
const Architecture& gpt2_architecture();
const Architecture& bloom_architecture();
const Architecture& gemma2_architecture();
const Architecture& gemma3_architecture();

}  // namespace plimsoll
