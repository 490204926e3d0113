// The architecture registry, the evaluation of a description's tensor list on
// a config, and the pieces the Llama family's descriptions share.
#include "formats/architecture.h"

#include <cmath>

namespace plimsoll {

std::span<const Architecture* const> architectures() {
  static const Architecture* const kAll[] = {
      &llama_architecture(), &mistral_architecture(), &qwen2_architecture(),
      &qwen3_architecture(), &phi3_architecture(),    &gpt2_architecture(),
      &bloom_architecture(), &gemma2_architecture(), &gemma3_architecture(),
  };
  return kAll;
}

const Architecture* architecture_named(const std::string& name) {
  for (const Architecture* a : architectures()) {
    if (name == a->name) return a;
  }
  return nullptr;
}

const Architecture* architecture_for_gguf(const std::string& general_architecture) {
  for (const Architecture* a : architectures()) {
    if (a->gguf_name && general_architecture == a->gguf_name) return a;
  }
  return nullptr;
}

const Architecture* architecture_for_hf(const std::string& model_type) {
  for (const Architecture* a : architectures()) {
    for (const char* t : a->hf_model_types) {
      if (model_type == t) return a;
    }
  }
  return nullptr;
}

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string gguf_architecture_names() {
  std::vector<std::string> names;
  for (const Architecture* a : architectures()) {
    if (a->gguf_name) names.emplace_back(a->gguf_name);
  }
  return join(names);
}

std::string hf_model_type_names() {
  std::vector<std::string> names;
  for (const Architecture* a : architectures()) {
    for (const char* t : a->hf_model_types) names.emplace_back(t);
  }
  return join(names);
}

std::vector<int64_t> shape_of(ShapeRule rule, const ModelConfig& c) {
  const int64_t d = c.dim, q = c.q_dim(), kv = c.kv_dim(), f = c.ffn_dim;
  switch (rule) {
    case ShapeRule::kVocabByDim: return {c.vocab_size, d};
    case ShapeRule::kCtxByDim: return {c.max_seq_len, d};
    case ShapeRule::kDim: return {d};
    case ShapeRule::kQByDim: return {q, d};
    case ShapeRule::kKvByDim: return {kv, d};
    case ShapeRule::kQkvByDim: return {q + 2 * kv, d};
    case ShapeRule::kDimByQ: return {d, q};
    case ShapeRule::kFfnByDim: return {f, d};
    case ShapeRule::kDimByFfn: return {d, f};
    case ShapeRule::kGateUpByDim: return {2 * f, d};
    case ShapeRule::kQ: return {q};
    case ShapeRule::kKv: return {kv};
    case ShapeRule::kQkv: return {q + 2 * kv};
    case ShapeRule::kFfn: return {f};
    case ShapeRule::kHeadDim: return {c.head_dim()};
    case ShapeRule::kHalfHeadDim: return {c.head_dim() / 2};
  }
  return {};
}

bool tensor_wanted(When when, const ModelConfig& c, bool fused_qkv) {
  const bool gated = c.ffn_gated();
  switch (when) {
    case When::kAlways: return true;
    case When::kUntied: return !c.tied_embeddings;
    case When::kNormBias: return c.norm_has_bias();
    case When::kSplitQkv: return !fused_qkv;
    case When::kFusedQkv: return fused_qkv;
    case When::kSplitQkvBias: return !fused_qkv && c.qkv_bias;
    case When::kFusedQkvBias: return fused_qkv && c.qkv_bias;
    case When::kOutBias: return c.out_bias;
    case When::kGated: return gated;
    case When::kGatedBias: return gated && c.ffn_bias;
    case When::kFfnBias: return c.ffn_bias;
    case When::kLearnedPositions: return c.positions == PositionKind::kLearned;
    case When::kEmbedNorm: return c.embed_norm;
    case When::kQkNorm: return c.qk_norm;
    case When::kRopeFreqs: return false;  // read by the GGUF loader, never bound
    case When::kPostNorms: return c.post_norms;
  }
  return false;
}

std::vector<ExpectedTensor> expected_tensors(const Architecture& a, const ModelConfig& c,
                                             const TensorStore& tensors,
                                             std::vector<ExpectedTensor>* unwanted) {
  std::vector<ExpectedTensor> out;
  auto add = [&](const TensorSpec& s, const std::string& prefix, int64_t layer, bool fused) {
    ExpectedTensor e{prefix + s.gguf, shape_of(s.shape, c), s.f32, s.slot, layer};
    if (tensor_wanted(s.when, c, fused)) {
      out.push_back(std::move(e));
    } else if (unwanted) {
      unwanted->push_back(std::move(e));
    }
  };
  for (const TensorSpec& s : a.tensors) {
    if (!s.per_layer) add(s, "", -1, false);
  }
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const bool fused = tensors.find(p + "attn_qkv.weight") != nullptr;
    for (const TensorSpec& s : a.tensors) {
      if (s.per_layer) add(s, p, l, fused);
    }
  }
  return out;
}

std::vector<TensorSpec> llama_family_tensors() {
  using S = ShapeRule;
  using W = When;
  return {
      {"token_embd.weight", "model.embed_tokens.weight", false, S::kVocabByDim, W::kAlways, false, Slot::kTokenEmbd},
      {"output_norm.weight", "model.norm.weight", false, S::kDim, W::kAlways, true, Slot::kOutputNorm},
      {"output.weight", "lm_head.weight", false, S::kVocabByDim, W::kUntied, false, Slot::kOutput},
      {"rope_freqs.weight", "", false, S::kHalfHeadDim, W::kRopeFreqs, true, Slot::kNone},
      {"attn_norm.weight", "input_layernorm.weight", true, S::kDim, W::kAlways, true, Slot::kAttnNorm},
      {"attn_q.weight", "self_attn.q_proj.weight", true, S::kQByDim, W::kSplitQkv, false, Slot::kQ},
      {"attn_k.weight", "self_attn.k_proj.weight", true, S::kKvByDim, W::kSplitQkv, false, Slot::kK},
      {"attn_v.weight", "self_attn.v_proj.weight", true, S::kKvByDim, W::kSplitQkv, false, Slot::kV},
      {"attn_q.bias", "self_attn.q_proj.bias", true, S::kQ, W::kSplitQkvBias, true, Slot::kBq},
      {"attn_k.bias", "self_attn.k_proj.bias", true, S::kKv, W::kSplitQkvBias, true, Slot::kBk},
      {"attn_v.bias", "self_attn.v_proj.bias", true, S::kKv, W::kSplitQkvBias, true, Slot::kBv},
      {"attn_qkv.weight", "", true, S::kQkvByDim, W::kFusedQkv, false, Slot::kQkv},
      {"attn_qkv.bias", "", true, S::kQkv, W::kFusedQkvBias, true, Slot::kBqkv},
      {"attn_output.weight", "self_attn.o_proj.weight", true, S::kDimByQ, W::kAlways, false, Slot::kWo},
      {"attn_output.bias", "self_attn.o_proj.bias", true, S::kDim, W::kOutBias, true, Slot::kBo},
      {"ffn_norm.weight", "post_attention_layernorm.weight", true, S::kDim, W::kAlways, true, Slot::kFfnNorm},
      {"ffn_gate.weight", "mlp.gate_proj.weight", true, S::kFfnByDim, W::kGated, false, Slot::kGate},
      {"ffn_gate.bias", "mlp.gate_proj.bias", true, S::kFfn, W::kGatedBias, true, Slot::kBGate},
      {"ffn_up.weight", "mlp.up_proj.weight", true, S::kFfnByDim, W::kAlways, false, Slot::kUp},
      {"ffn_up.bias", "mlp.up_proj.bias", true, S::kFfn, W::kFfnBias, true, Slot::kBUp},
      {"ffn_down.weight", "mlp.down_proj.weight", true, S::kDimByFfn, W::kAlways, false, Slot::kDown},
      {"ffn_down.bias", "mlp.down_proj.bias", true, S::kDim, W::kFfnBias, true, Slot::kBDown},
  };
}

HfKeys llama_family_hf_keys(double max_pos, double eps) {
  HfKeys k;
  k.dim = {{"hidden_size"}};
  k.n_layers = {{"num_hidden_layers"}};
  k.n_heads = {{"num_attention_heads"}};
  k.n_kv_heads = {{"num_key_value_heads"}, -1.0, true};  // -1: as many as the query heads
  k.ffn_dim = {{"intermediate_size"}};
  k.vocab_size = {{"vocab_size"}};
  k.max_seq_len = {{"max_position_embeddings"}, max_pos, true};
  k.norm_eps = {{"rms_norm_eps"}, eps, true};
  return k;
}

namespace {

constexpr int64_t kMaxWidth = int64_t{1} << 24;

Error unsupported(const JsonFile& j, const std::string& field, const std::string& problem) {
  return make_error(ErrorCode::kUnsupported, j.path + ": field '" + field + "' " + problem);
}

// A number of the rope_scaling object: "rope_scaling.<key>".
Result<double> scaling_number(const JsonFile& j, const nlohmann::json& s, const std::string& key) {
  const auto it = s.find(key);
  if (it == s.end() || !it->is_number()) {
    return j.field_error("rope_scaling." + key, it == s.end() ? "is missing" : "must be a number");
  }
  return it->get<double>();
}

// Llama 3's frequency factors as transformers' _compute_llama3_parameters
// computes them, written as the divisor of each frequency (llama.cpp's rope_freqs).
Status llama3_factors(const JsonFile& j, const nlohmann::json& s, ModelConfig& c) {
  PLIMSOLL_ASSIGN(const double factor, scaling_number(j, s, "factor"));
  PLIMSOLL_ASSIGN(const double low, scaling_number(j, s, "low_freq_factor"));
  PLIMSOLL_ASSIGN(const double high, scaling_number(j, s, "high_freq_factor"));
  PLIMSOLL_ASSIGN(const double old_ctx, scaling_number(j, s, "original_max_position_embeddings"));
  if (!(factor >= 1.0 && factor < 1e6)) return j.field_error("rope_scaling.factor", "must be in [1, 1e6)");
  if (!(low > 0.0 && high > low && high < 1e6)) {
    return j.field_error("rope_scaling.high_freq_factor", "must be above low_freq_factor, both positive");
  }
  if (!(old_ctx >= 1.0 && old_ctx < 1e9)) {
    return j.field_error("rope_scaling.original_max_position_embeddings", "must be positive");
  }
  const int64_t hd = c.head_dim(), half = hd / 2;
  const double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  c.rope_freq_factors.assign(static_cast<size_t>(half), 1.0f);
  for (int64_t i = 0; i < half; ++i) {
    const double freq = std::pow(static_cast<double>(c.rope_theta), -2.0 * static_cast<double>(i) / static_cast<double>(hd));
    const double wavelen = 2.0 * M_PI / freq;
    double divisor = 1.0;
    if (wavelen > low_wavelen) {
      divisor = factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (old_ctx / wavelen - low) / (high - low);
      divisor = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    c.rope_freq_factors[static_cast<size_t>(i)] = static_cast<float>(divisor);
  }
  return {};
}

}  // namespace

Status read_hf_rope_scaling(const JsonFile& j, ModelConfig& c) {
  if (!j.has("rope_scaling")) return {};
  const nlohmann::json& s = j.root.at("rope_scaling");
  if (!s.is_object()) return j.field_error("rope_scaling", "must be an object or null");
  std::string type;
  for (const char* key : {"rope_type", "type"}) {
    if (s.contains(key) && s.at(key).is_string()) type = s.at(key).get<std::string>();
    if (!type.empty()) break;
  }
  if (type == "default") return {};
  if (type == "llama3") return llama3_factors(j, s, c);
  if (type == "linear") {
    PLIMSOLL_ASSIGN(const double factor, scaling_number(j, s, "factor"));
    if (!(factor >= 1.0 && factor < 1e6)) return j.field_error("rope_scaling.factor", "must be in [1, 1e6)");
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
    return {};
  }
  return unsupported(j, "rope_scaling", "has type '" + type + "'; supported are llama3, linear, default");
}

Status read_hf_llama_common(const JsonFile& j, ModelConfig& c) {
  PLIMSOLL_ASSIGN(const std::string act, j.string_or("hidden_act", "silu"));
  if (act != "silu") return unsupported(j, "hidden_act", "is '" + act + "', only 'silu' is supported");
  if (j.has("head_dim")) {
    PLIMSOLL_ASSIGN(const int64_t hd, j.integer("head_dim", 1, kMaxWidth));
    if (hd % 2 != 0) return j.field_error("head_dim", "is " + std::to_string(hd) + "; RoPE needs it even");
    if (hd != c.dim / c.n_heads || c.dim % c.n_heads != 0) c.head_dim_override = hd;
  }
  return read_hf_rope_scaling(j, c);
}

}  // namespace plimsoll
