// Gemma 2 (Gemma2ForCausalLM) and Gemma 3 text (Gemma3ForCausalLM, model_type
// gemma3_text): embeddings times sqrt(dim), RMSNorm scaling by (1 + w) (the
// HF loader adds the 1, as llama.cpp's converter does for its GGUF), GeGLU with
// the tanh GELU, RMSNorms after attention and after the feed-forward as well as
// before, queries scaled by query_pre_attn_scalar^-1/2, sliding-window local
// layers between global ones (Gemma 2: every other, from layer 0; Gemma 3: five
// local to one global), a tied head. Gemma 2 soft-caps attention scores and
// the final logits; Gemma 3 has qk-norm and rotates local layers with
// rope_local_base_freq, global ones with rope_theta and rope_scaling.
// llama.cpp writes them as GGUF "gemma2" / "gemma3", half-split (NeoX) RoPE;
// its files carry no query_pre_attn_scalar, so the scale follows llama.cpp:
// 1/sqrt(head_dim), or 1/sqrt(dim / heads) for the 27B models (46 / 62 layers).
#include <cmath>

#include "formats/architecture.h"
#include "formats/gguf.h"

namespace plimsoll {
namespace {

constexpr int64_t kMaxWidth = int64_t{1} << 24;

Error unsupported(const JsonFile& j, const std::string& field, const std::string& problem) {
  return make_error(ErrorCode::kUnsupported, j.path + ": field '" + field + "' " + problem);
}

ModelConfig gemma_switches(const char* name, bool qk_norm) {
  ModelConfig c;
  c.arch = name;
  c.ffn = FfnKind::kGeGlu;
  c.post_norms = true;
  c.embed_scale = true;
  c.qk_norm = qk_norm;
  c.tied_embeddings = true;
  return c;
}

// A positive number or null (0: none), e.g. the soft-capping fields.
Result<float> optional_positive(const JsonFile& j, const std::string& field, double fallback) {
  if (j.root.contains(field) && j.root.at(field).is_null()) return 0.0f;
  PLIMSOLL_ASSIGN(const double v, j.number_or(field, fallback));
  if (!(v >= 0.0 && v < 1e9)) return j.field_error(field, "must be a positive number or null");
  return static_cast<float>(v);
}

// layer_types (["sliding_attention" | "full_attention"] per layer) when present,
// else every `pattern`-th layer (1-based) is global: local iff (i + 1) % pattern != 0.
Status read_layer_types(const JsonFile& j, int64_t pattern, ModelConfig& c) {
  c.local_layers.assign(static_cast<size_t>(c.n_layers), 0);
  if (j.has("layer_types")) {
    const nlohmann::json& t = j.root.at("layer_types");
    if (!t.is_array() || static_cast<int64_t>(t.size()) != c.n_layers) {
      return j.field_error("layer_types", "must list one type per layer (" + std::to_string(c.n_layers) + ")");
    }
    for (size_t i = 0; i < t.size(); ++i) {
      const std::string type = t[i].is_string() ? t[i].get<std::string>() : "";
      if (type != "sliding_attention" && type != "full_attention") {
        return unsupported(j, "layer_types", "has '" + type + "'; supported are sliding_attention, full_attention");
      }
      c.local_layers[i] = type == "sliding_attention";
    }
    return {};
  }
  for (int64_t i = 0; i < c.n_layers; ++i) c.local_layers[static_cast<size_t>(i)] = (i + 1) % pattern != 0;
  return {};
}

// The fields both Gemmas read; `default_softcaps`: Gemma2Config's 50 / 30.
Status read_gemma_common(const JsonFile& j, ModelConfig& c, bool default_softcaps) {
  std::string act_field = j.has("hidden_activation") ? "hidden_activation" : "hidden_act";
  PLIMSOLL_ASSIGN(const std::string act, j.string_or(act_field, "gelu_pytorch_tanh"));
  if (act != "gelu_pytorch_tanh" && act != "gelu_new") {
    return unsupported(j, act_field, "is '" + act + "'; supported are gelu_pytorch_tanh, gelu_new");
  }
  PLIMSOLL_ASSIGN(const bool bias, j.boolean_or("attention_bias", false));
  if (bias) return unsupported(j, "attention_bias", "is true; Gemma attention biases are not supported");
  PLIMSOLL_ASSIGN(const int64_t hd, j.integer_or("head_dim", 256, 2, kMaxWidth));
  if (hd % 2 != 0) return j.field_error("head_dim", "is " + std::to_string(hd) + "; RoPE needs it even");
  if (hd * c.n_heads != c.dim) c.head_dim_override = hd;
  PLIMSOLL_ASSIGN(const double scalar, j.number_or("query_pre_attn_scalar", 256.0));
  if (!(scalar > 0.0 && scalar < 1e9)) return j.field_error("query_pre_attn_scalar", "must be positive");
  c.query_scale = static_cast<float>(1.0 / std::sqrt(scalar));
  PLIMSOLL_ASSIGN(c.attn_softcap, optional_positive(j, "attn_logit_softcapping", default_softcaps ? 50.0 : 0.0));
  PLIMSOLL_ASSIGN(c.final_softcap, optional_positive(j, "final_logit_softcapping", default_softcaps ? 30.0 : 0.0));
  if (j.root.contains("sliding_window") && j.root.at("sliding_window").is_null()) return {};
  PLIMSOLL_ASSIGN(c.sliding_window, j.integer_or("sliding_window", 4096, 1, kMaxWidth));
  return {};
}

Status gemma2_hf_fields(const JsonFile& j, ModelConfig& c) {
  PLIMSOLL_TRY(read_gemma_common(j, c, true));
  return read_layer_types(j, 2, c);
}

// rope_parameters (transformers 5): {"full_attention": {...}, "sliding_attention": {...}}.
Status read_rope_parameters(const JsonFile& j, ModelConfig& c) {
  const nlohmann::json& p = j.root.at("rope_parameters");
  for (const char* kind : {"full_attention", "sliding_attention"}) {
    const std::string field = std::string("rope_parameters.") + kind;
    if (!p.is_object() || !p.contains(kind) || !p.at(kind).is_object()) return j.field_error(field, "is missing");
    const nlohmann::json& r = p.at(kind);
    const std::string type = r.value("rope_type", std::string("default"));
    const double theta = r.contains("rope_theta") && r.at("rope_theta").is_number() ? r.at("rope_theta").get<double>() : -1.0;
    if (!(theta > 0.0 && theta < 1e12)) return j.field_error(field + ".rope_theta", "must be a positive number");
    const bool full = std::string(kind) == "full_attention";
    (full ? c.rope_theta : c.rope_theta_local) = static_cast<float>(theta);
    if (type == "default") continue;
    const double factor = r.contains("factor") && r.at("factor").is_number() ? r.at("factor").get<double>() : 0.0;
    if (type != "linear" || !full) return unsupported(j, field + ".rope_type", "is '" + type + "'; supported are default, linear (full_attention)");
    if (!(factor >= 1.0 && factor < 1e6)) return j.field_error(field + ".factor", "must be in [1, 1e6)");
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
  }
  return {};
}

// Gemma3TextConfig: rope_theta 1e6, rope_local_base_freq 1e4, sliding_window_pattern 6.
Status gemma3_hf_fields(const JsonFile& j, ModelConfig& c) {
  PLIMSOLL_TRY(read_gemma_common(j, c, false));
  if (j.has("rope_parameters")) {
    PLIMSOLL_TRY(read_rope_parameters(j, c));
  } else {
    PLIMSOLL_ASSIGN(const double theta, j.number_or("rope_theta", 1e6));
    PLIMSOLL_ASSIGN(const double local, j.number_or("rope_local_base_freq", 1e4));
    if (!(theta > 0.0 && theta < 1e12)) return j.field_error("rope_theta", "must be positive");
    if (!(local > 0.0 && local < 1e12)) return j.field_error("rope_local_base_freq", "must be positive");
    c.rope_theta = static_cast<float>(theta);
    c.rope_theta_local = static_cast<float>(local);
    PLIMSOLL_TRY(read_hf_rope_scaling(j, c));  // global layers only (local_rope)
  }
  PLIMSOLL_ASSIGN(const int64_t pattern, j.integer_or("sliding_window_pattern", 6, 1, kMaxWidth));
  return read_layer_types(j, pattern, c);
}

// llama.cpp's f_attention_scale: "<arch>.attention.scale" when the file has it, else
// 1/sqrt(dim / heads) for the 27B models and 1/sqrt(head_dim) for the others.
Status gguf_query_scale(const GgufFile& g, const std::string& arch, ModelConfig& c, int64_t layers_of_27b) {
  if (c.n_layers == layers_of_27b) c.query_scale = 1.0f / std::sqrt(static_cast<float>(c.dim / c.n_heads));
  const std::string key = arch + ".attention.scale";
  if (!g.find(key)) return {};
  PLIMSOLL_ASSIGN(const double scale, g.get_float(key));
  if (!(scale > 0.0 && scale < 1e6)) return make_error(ErrorCode::kInvalidFile, g.name + ": key '" + key + "' must be positive");
  c.query_scale = static_cast<float>(scale);
  return {};
}

Result<float> gguf_softcap(const GgufFile& g, const std::string& key, double fallback) {
  PLIMSOLL_ASSIGN(const double v, g.get_float_or(key, fallback));
  if (!(v >= 0.0 && v < 1e9)) return make_error(ErrorCode::kInvalidFile, g.name + ": key '" + key + "' must be positive");
  return static_cast<float>(v);
}

Result<int64_t> gguf_window(const GgufFile& g, const std::string& key, int64_t fallback) {
  if (!g.find(key) && fallback > 0) return fallback;
  PLIMSOLL_ASSIGN(const int64_t w, g.get_int(key));
  if (w < 1 || w > kMaxWidth) {
    return make_error(ErrorCode::kInvalidFile, g.name + ": key '" + key + "' is " + std::to_string(w) + ", must be 1 to " +
                                                   std::to_string(kMaxWidth));
  }
  return w;
}

void every_nth_global(ModelConfig& c, int64_t pattern) {
  c.local_layers.assign(static_cast<size_t>(c.n_layers), 0);
  for (int64_t i = 0; i < c.n_layers; ++i) c.local_layers[static_cast<size_t>(i)] = (i + 1) % pattern != 0;
}

// llama.cpp: sliding window 4096 unless the key says, soft-caps 50 / 30 unless they say.
Status gemma2_gguf_fields(const GgufFile& g, ModelConfig& c) {
  PLIMSOLL_ASSIGN(c.sliding_window, gguf_window(g, "gemma2.attention.sliding_window", 4096));
  PLIMSOLL_ASSIGN(c.attn_softcap, gguf_softcap(g, "gemma2.attn_logit_softcapping", 50.0));
  PLIMSOLL_ASSIGN(c.final_softcap, gguf_softcap(g, "gemma2.final_logit_softcapping", 30.0));
  every_nth_global(c, 2);
  return gguf_query_scale(g, "gemma2", c, 46);
}

// llama.cpp: the window is required, local layers rotate with base 10000 unscaled.
Status gemma3_gguf_fields(const GgufFile& g, ModelConfig& c) {
  PLIMSOLL_ASSIGN(c.sliding_window, gguf_window(g, "gemma3.attention.sliding_window", 0));
  PLIMSOLL_ASSIGN(c.final_softcap, gguf_softcap(g, "gemma3.final_logit_softcapping", 0.0));
  c.rope_theta_local = 10000.0f;
  every_nth_global(c, 6);
  return gguf_query_scale(g, "gemma3", c, 62);
}

std::vector<TensorSpec> gemma_tensors() {
  using S = ShapeRule;
  using W = When;
  const HfTransform one = HfTransform::kPlusOne;
  return {
      {"token_embd.weight", "model.embed_tokens.weight", false, S::kVocabByDim, W::kAlways, false, Slot::kTokenEmbd},
      {"output_norm.weight", "model.norm.weight", false, S::kDim, W::kAlways, true, Slot::kOutputNorm, one},
      {"output.weight", "lm_head.weight", false, S::kVocabByDim, W::kUntied, false, Slot::kOutput},
      {"attn_norm.weight", "input_layernorm.weight", true, S::kDim, W::kAlways, true, Slot::kAttnNorm, one},
      {"attn_q.weight", "self_attn.q_proj.weight", true, S::kQByDim, W::kAlways, false, Slot::kQ},
      {"attn_k.weight", "self_attn.k_proj.weight", true, S::kKvByDim, W::kAlways, false, Slot::kK},
      {"attn_v.weight", "self_attn.v_proj.weight", true, S::kKvByDim, W::kAlways, false, Slot::kV},
      {"attn_q_norm.weight", "self_attn.q_norm.weight", true, S::kHeadDim, W::kQkNorm, true, Slot::kQNorm, one},
      {"attn_k_norm.weight", "self_attn.k_norm.weight", true, S::kHeadDim, W::kQkNorm, true, Slot::kKNorm, one},
      {"attn_output.weight", "self_attn.o_proj.weight", true, S::kDimByQ, W::kAlways, false, Slot::kWo},
      {"post_attention_norm.weight", "post_attention_layernorm.weight", true, S::kDim, W::kPostNorms, true,
       Slot::kAttnPostNorm, one},
      {"ffn_norm.weight", "pre_feedforward_layernorm.weight", true, S::kDim, W::kAlways, true, Slot::kFfnNorm, one},
      {"ffn_gate.weight", "mlp.gate_proj.weight", true, S::kFfnByDim, W::kGated, false, Slot::kGate},
      {"ffn_up.weight", "mlp.up_proj.weight", true, S::kFfnByDim, W::kAlways, false, Slot::kUp},
      {"ffn_down.weight", "mlp.down_proj.weight", true, S::kDimByFfn, W::kAlways, false, Slot::kDown},
      {"post_ffw_norm.weight", "post_feedforward_layernorm.weight", true, S::kDim, W::kPostNorms, true,
       Slot::kFfnPostNorm, one},
  };
}

}  // namespace

const Architecture& gemma2_architecture() {
  static const Architecture a{
      .name = "gemma2",
      .gguf_name = "gemma2",
      .hf_model_types = {"gemma2"},
      .switches = gemma_switches("gemma2", false),
      .gguf_rope = RopeLayout::kHalfSplit,
      .gguf_eps_key = "attention.layer_norm_rms_epsilon",
      .hf_keys = llama_family_hf_keys(8192, 1e-6),
      .hf_always_tied = true,  // Gemma2ForCausalLM ties lm_head to embed_tokens; checkpoints store no head
      .hf_strip_prefix = "",
      .hf_layer_prefix = "model.layers.",
      .hf_ignored = {},
      .tensors = gemma_tensors(),
      .hf_fields = gemma2_hf_fields,
      .gguf_fields = gemma2_gguf_fields,
  };
  return a;
}

const Architecture& gemma3_architecture() {
  static const Architecture a{
      .name = "gemma3",
      .gguf_name = "gemma3",
      .hf_model_types = {"gemma3_text"},
      .switches = gemma_switches("gemma3", true),
      .gguf_rope = RopeLayout::kHalfSplit,
      .gguf_eps_key = "attention.layer_norm_rms_epsilon",
      .hf_keys = llama_family_hf_keys(131072, 1e-6),
      .hf_always_tied = true,
      .hf_strip_prefix = "",
      .hf_layer_prefix = "model.layers.",
      .hf_ignored = {},
      .tensors = gemma_tensors(),
      .hf_fields = gemma3_hf_fields,
      .gguf_fields = gemma3_gguf_fields,
  };
  return a;
}

}  // namespace plimsoll
