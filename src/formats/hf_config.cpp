// config.json -> ModelConfig for each supported model_type, with Hugging
// Face's defaults for absent fields; generation_config / tokenizer_config fields.
#include <algorithm>
#include <set>

#include "formats/hf_model.h"

namespace plimsoll {
namespace {

constexpr int64_t kMaxWidth = int64_t{1} << 24;
constexpr int64_t kMaxLayers = 4096;

Error unsupported(const JsonFile& j, const std::string& field, const std::string& problem) {
  return make_error(ErrorCode::kUnsupported, j.path + ": field '" + field + "' " + problem);
}

// heads_field: the file's name for the number of attention heads.
Status check_geometry(const JsonFile& j, const ModelConfig& c, const std::string& heads_field) {
  if (c.dim % c.n_heads != 0) {
    const std::string heads = std::to_string(c.n_heads), dim = std::to_string(c.dim);
    return j.field_error(heads_field, "is " + heads + ", which does not divide the hidden size " + dim);
  }
  if (c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0) {
    const std::string kv = std::to_string(c.n_kv_heads), heads = std::to_string(c.n_heads);
    return j.field_error("num_key_value_heads", "is " + kv + ", which does not divide " + heads + " heads");
  }
  if (c.positions == PositionKind::kRope && c.head_dim() % 2 != 0) {
    return j.field_error(heads_field, "gives an odd head dimension; RoPE needs it even");
  }
  return {};
}

// The fields Llama, Mistral and Qwen2 share; `max_pos` is the class default.
Result<ModelConfig> llama_family(const JsonFile& j, const std::string& type, int64_t max_pos) {
  ModelConfig c;
  c.arch = "llama";
  PLIMSOLL_ASSIGN(c.dim, j.integer("hidden_size", 1, kMaxWidth));
  PLIMSOLL_ASSIGN(c.n_layers, j.integer("num_hidden_layers", 1, kMaxLayers));
  PLIMSOLL_ASSIGN(c.n_heads, j.integer("num_attention_heads", 1, kMaxWidth));
  PLIMSOLL_ASSIGN(c.n_kv_heads, j.integer_or("num_key_value_heads", c.n_heads, 1, kMaxWidth));
  PLIMSOLL_ASSIGN(c.ffn_dim, j.integer("intermediate_size", 1, kMaxWidth));
  PLIMSOLL_ASSIGN(c.vocab_size, j.integer("vocab_size", 1, INT32_MAX));
  PLIMSOLL_ASSIGN(c.max_seq_len, j.integer_or("max_position_embeddings", max_pos, 1, kMaxWidth));
  PLIMSOLL_ASSIGN(const double eps, j.number_or("rms_norm_eps", 1e-6));
  PLIMSOLL_ASSIGN(const double theta, j.number_or("rope_theta", 10000.0));
  if (!(eps > 0.0 && eps < 1.0)) return j.field_error("rms_norm_eps", "must be in (0, 1)");
  if (!(theta > 0.0 && theta < 1e12)) return j.field_error("rope_theta", "must be positive");
  c.norm_eps = static_cast<float>(eps);
  c.rope_theta = static_cast<float>(theta);
  c.rope_layout = RopeLayout::kHalfSplit;
  PLIMSOLL_ASSIGN(c.tied_embeddings, j.boolean_or("tie_word_embeddings", false));
  PLIMSOLL_ASSIGN(const std::string act, j.string_or("hidden_act", "silu"));
  if (act != "silu") return unsupported(j, "hidden_act", "is '" + act + "', only 'silu' is supported");
  if (j.has("rope_scaling")) return unsupported(j, "rope_scaling", "is set; RoPE scaling is not supported");
  if (j.has("head_dim")) {
    PLIMSOLL_ASSIGN(const int64_t hd, j.integer("head_dim", 1, kMaxWidth));
    if (hd != c.dim / c.n_heads) {
      return unsupported(j, "head_dim", "is " + std::to_string(hd) + ", only hidden_size / heads is supported");
    }
  }
  if (type == "llama") {
    PLIMSOLL_ASSIGN(c.qkv_bias, j.boolean_or("attention_bias", false));
    c.out_bias = c.qkv_bias;
    PLIMSOLL_ASSIGN(c.ffn_bias, j.boolean_or("mlp_bias", false));
  }
  return c;
}

Result<ModelConfig> llama_config(const JsonFile& j, const std::string& type) {
  if (type == "llama") return llama_family(j, type, 2048);
  if (type == "mistral") {
    PLIMSOLL_ASSIGN(ModelConfig c, llama_family(j, type, 4096 * 32));
    // Sliding-window attention equals full attention up to the window: the
    // context is capped there so answers stay exact.
    if (j.has("sliding_window")) {
      PLIMSOLL_ASSIGN(const int64_t window, j.integer("sliding_window", 1, kMaxWidth));
      c.max_seq_len = std::min(c.max_seq_len, window);
    }
    return c;
  }
  PLIMSOLL_ASSIGN(ModelConfig c, llama_family(j, type, 32768));  // qwen2
  PLIMSOLL_ASSIGN(const bool sliding, j.boolean_or("use_sliding_window", false));
  if (sliding) return unsupported(j, "use_sliding_window", "is true; sliding-window attention is not supported");
  c.qkv_bias = true;
  return c;
}

Status check_gelu_tanh(const JsonFile& j, const std::string& field, const std::string& fallback) {
  static const std::set<std::string> kTanh = {"gelu_new", "gelu_pytorch_tanh", "gelu_fast"};
  PLIMSOLL_ASSIGN(const std::string act, j.string_or(field, fallback));
  if (!kTanh.count(act)) {
    return unsupported(j, field, "is '" + act + "', only the tanh GELU (gelu_new) is supported");
  }
  return {};
}

void set_gelu_layernorm(ModelConfig& c) {
  c.norm = NormKind::kLayer;
  c.ffn = FfnKind::kGeluTanh;
  c.qkv_bias = c.out_bias = c.ffn_bias = true;
  c.tied_embeddings = true;
  c.n_kv_heads = c.n_heads;
}

Result<ModelConfig> gpt2_config(const JsonFile& j) {
  ModelConfig c;
  c.arch = "gpt2";
  c.positions = PositionKind::kLearned;
  PLIMSOLL_ASSIGN(c.dim, j.integer_or("n_embd", 768, 1, kMaxWidth));
  PLIMSOLL_ASSIGN(c.n_layers, j.integer_or("n_layer", 12, 1, kMaxLayers));
  PLIMSOLL_ASSIGN(c.n_heads, j.integer_or("n_head", 12, 1, kMaxWidth));
  PLIMSOLL_ASSIGN(c.ffn_dim, j.integer_or("n_inner", 4 * c.dim, 1, kMaxWidth));
  PLIMSOLL_ASSIGN(c.vocab_size, j.integer_or("vocab_size", 50257, 1, INT32_MAX));
  PLIMSOLL_ASSIGN(c.max_seq_len, j.integer_or("n_positions", 1024, 1, kMaxWidth));
  PLIMSOLL_ASSIGN(const double eps, j.number_or("layer_norm_epsilon", 1e-5));
  if (!(eps > 0.0 && eps < 1.0)) return j.field_error("layer_norm_epsilon", "must be in (0, 1)");
  c.norm_eps = static_cast<float>(eps);
  PLIMSOLL_TRY(check_gelu_tanh(j, "activation_function", "gelu_new"));
  PLIMSOLL_ASSIGN(const bool scale, j.boolean_or("scale_attn_weights", true));
  if (!scale) return unsupported(j, "scale_attn_weights", "is false; only scaled attention is supported");
  PLIMSOLL_ASSIGN(const bool by_layer, j.boolean_or("scale_attn_by_inverse_layer_idx", false));
  if (by_layer) return unsupported(j, "scale_attn_by_inverse_layer_idx", "is true; not supported");
  set_gelu_layernorm(c);
  return c;
}

Result<ModelConfig> bloom_config(const JsonFile& j) {
  ModelConfig c;
  c.arch = "bloom";
  c.positions = PositionKind::kAlibi;
  c.embed_norm = true;
  const std::string dim_field = j.has("n_embed") ? "n_embed" : "hidden_size";
  PLIMSOLL_ASSIGN(c.dim, j.integer_or(dim_field, 64, 1, kMaxWidth));
  PLIMSOLL_ASSIGN(c.n_layers, j.integer_or(j.has("num_hidden_layers") ? "num_hidden_layers" : "n_layer", 2, 1, kMaxLayers));
  PLIMSOLL_ASSIGN(c.n_heads, j.integer_or(j.has("num_attention_heads") ? "num_attention_heads" : "n_head", 8, 1, kMaxWidth));
  c.ffn_dim = 4 * c.dim;
  PLIMSOLL_ASSIGN(c.vocab_size, j.integer_or("vocab_size", 250880, 1, INT32_MAX));
  // ALiBi has no position table; BLOOM was trained on 2048 tokens.
  PLIMSOLL_ASSIGN(c.max_seq_len, j.integer_or("seq_length", 2048, 1, kMaxWidth));
  PLIMSOLL_ASSIGN(const double eps, j.number_or("layer_norm_epsilon", 1e-5));
  if (!(eps > 0.0 && eps < 1.0)) return j.field_error("layer_norm_epsilon", "must be in (0, 1)");
  c.norm_eps = static_cast<float>(eps);
  PLIMSOLL_ASSIGN(const bool post, j.boolean_or("apply_residual_connection_post_layernorm", false));
  if (post) return unsupported(j, "apply_residual_connection_post_layernorm", "is true; not supported");
  set_gelu_layernorm(c);
  return c;
}

}  // namespace

Result<ModelConfig> config_from_hf(const JsonFile& j) {
  PLIMSOLL_ASSIGN(const std::string type, j.string("model_type"));
  Result<ModelConfig> c = make_error(ErrorCode::kInternal, "unset");
  if (type == "llama" || type == "mistral" || type == "qwen2") {
    c = llama_config(j, type);
  } else if (type == "gpt2") {
    c = gpt2_config(j);
  } else if (type == "bloom") {
    c = bloom_config(j);
  } else {
    return unsupported(j, "model_type", "is '" + type +
                                            "'; supported are llama, mistral, qwen2, gpt2, bloom");
  }
  if (!c.ok()) return c;
  const std::string heads_field = type == "gpt2"                          ? "n_head"
                                  : j.has("num_attention_heads") || type != "bloom" ? "num_attention_heads"
                                                                                    : "n_head";
  PLIMSOLL_TRY(check_geometry(j, *c, heads_field));
  c->name = type;
  return c;
}

}  // namespace plimsoll
