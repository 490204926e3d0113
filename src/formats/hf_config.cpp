// config.json -> ModelConfig through the architecture's description
// (formats/architecture.h): its keys with Hugging Face's defaults, its
// switches, then the fields only it reads.
#include "formats/architecture.h"
#include "formats/hf_model.h"

namespace plimsoll {
namespace {

constexpr int64_t kMaxWidth = int64_t{1} << 24;
constexpr int64_t kMaxLayers = 4096;

// The first of the key's names present in the file, or "" when none is.
std::string present_name(const JsonFile& j, const HfKey& k) {
  for (const char* n : k.names) {
    if (n && j.has(n)) return n;
  }
  return "";
}

// An integer key in [1, max]: the file's value, else its default; required without one.
Result<int64_t> read_int(const JsonFile& j, const HfKey& k, int64_t max) {
  const std::string name = present_name(j, k);
  if (!name.empty()) return j.integer(name, 1, max);
  if (k.has_fallback) return static_cast<int64_t>(k.fallback);
  return j.integer(k.names[0] ? k.names[0] : "?", 1, max);  // the "missing field" error
}

// heads_field: the file's name for the number of attention heads.
Status check_geometry(const JsonFile& j, const ModelConfig& c, const std::string& heads_field) {
  if (!c.head_dim_override && c.dim % c.n_heads != 0) {
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

Status read_sizes(const JsonFile& j, const HfKeys& k, ModelConfig& c) {
  PLIMSOLL_ASSIGN(c.dim, read_int(j, k.dim, kMaxWidth));
  PLIMSOLL_ASSIGN(c.n_layers, read_int(j, k.n_layers, kMaxLayers));
  PLIMSOLL_ASSIGN(c.n_heads, read_int(j, k.n_heads, kMaxWidth));
  if (present_name(j, k.n_kv_heads).empty()) {
    c.n_kv_heads = c.n_heads;
  } else {
    PLIMSOLL_ASSIGN(c.n_kv_heads, read_int(j, k.n_kv_heads, kMaxWidth));
  }
  if (present_name(j, k.ffn_dim).empty() && k.ffn_dim_times_dim > 0) {
    c.ffn_dim = static_cast<int64_t>(k.ffn_dim_times_dim * static_cast<double>(c.dim));
  } else {
    PLIMSOLL_ASSIGN(c.ffn_dim, read_int(j, k.ffn_dim, kMaxWidth));
  }
  PLIMSOLL_ASSIGN(c.vocab_size, read_int(j, k.vocab_size, INT32_MAX));
  PLIMSOLL_ASSIGN(c.max_seq_len, read_int(j, k.max_seq_len, kMaxWidth));
  const std::string eps_name = present_name(j, k.norm_eps);
  const std::string eps_field = eps_name.empty() ? k.norm_eps.names[0] : eps_name;
  PLIMSOLL_ASSIGN(const double eps, j.number_or(eps_field, k.norm_eps.fallback));
  if (!(eps > 0.0 && eps < 1.0)) return j.field_error(eps_field, "must be in (0, 1)");
  c.norm_eps = static_cast<float>(eps);
  return {};
}

}  // namespace

Result<ModelConfig> config_from_hf(const JsonFile& j) {
  PLIMSOLL_ASSIGN(const std::string type, j.string("model_type"));
  const Architecture* a = architecture_for_hf(type);
  if (!a) {
    return make_error(ErrorCode::kUnsupported, j.path + ": field 'model_type' is '" + type +
                                                   "'; supported are " + hf_model_type_names());
  }
  ModelConfig c = a->switches;
  PLIMSOLL_TRY(read_sizes(j, a->hf_keys, c));
  if (c.positions == PositionKind::kRope) {
    PLIMSOLL_ASSIGN(const double theta, j.number_or("rope_theta", 10000.0));
    if (!(theta > 0.0 && theta < 1e12)) return j.field_error("rope_theta", "must be positive");
    c.rope_theta = static_cast<float>(theta);
    c.rope_layout = RopeLayout::kHalfSplit;  // the checkpoints' rotate_half
  }
  if (a->hf_always_tied) {
    c.tied_embeddings = true;
  } else {
    PLIMSOLL_ASSIGN(c.tied_embeddings, j.boolean_or("tie_word_embeddings", false));
  }
  if (a->hf_fields) PLIMSOLL_TRY(a->hf_fields(j, c));
  std::string heads_field = present_name(j, a->hf_keys.n_heads);
  if (heads_field.empty()) heads_field = a->hf_keys.n_heads.names[0];
  PLIMSOLL_TRY(check_geometry(j, c, heads_field));
  c.name = type;
  return c;
}

}  // namespace plimsoll
