// Reads the plimsoll.dev/model-* annotations into a ModelConfig and the
// weight bytes the plan counts; every error names its annotation.
#include "webhook/model_metadata.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

#include "core/bytes.h"
#include "core/dtype.h"

namespace plimsoll::webhook {
namespace {

Error bad(const std::string& key, const std::string& value, const std::string& why) {
  return make_error(ErrorCode::kInvalidArgument, "annotation " + key + "=\"" + value + "\": " + why);
}

Result<int64_t> positive_int(const Annotations& a, const char* key) {
  auto it = a.find(key);
  if (it == a.end()) return make_error(ErrorCode::kNotFound, std::string("annotation ") + key + " is missing");
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end != '\0' || v <= 0) return bad(key, it->second, "not a positive integer");
  return static_cast<int64_t>(v);
}

std::optional<int64_t> optional_int(const Annotations& a, const char* key, Status& status) {
  if (!a.count(key)) return std::nullopt;
  auto v = positive_int(a, key);
  if (!v) status = v.error();
  return v ? std::optional<int64_t>(*v) : std::nullopt;
}

// heads and head_dim: either may be given; dim = heads x head_dim must hold.
Status read_heads(const Annotations& a, ModelConfig& c) {
  Status s;
  const auto heads = optional_int(a, keys::kModelHeads, s);
  const auto head_dim = optional_int(a, keys::kModelHeadDim, s);
  if (!s) return s;
  if (!heads && !head_dim) {
    return make_error(ErrorCode::kNotFound, std::string("annotation ") + keys::kModelHeads + " or " +
                                                keys::kModelHeadDim + " is missing");
  }
  c.n_heads = heads ? *heads : c.dim / *head_dim;
  if (c.n_heads <= 0 || c.dim % c.n_heads != 0 || (head_dim && c.n_heads * *head_dim != c.dim)) {
    return make_error(ErrorCode::kUnsupported,
                      fmt::format("the model's dim ({}) must equal heads x head-dim; Plimsoll runs only such models", c.dim));
  }
  const auto kv_heads = optional_int(a, keys::kModelKvHeads, s);
  if (!s) return s;
  c.n_kv_heads = kv_heads ? *kv_heads : c.n_heads;
  return {};
}

Result<ModelConfig> read_config(const Annotations& a) {
  ModelConfig c;
  PLIMSOLL_ASSIGN(c.dim, positive_int(a, keys::kModelDim));
  PLIMSOLL_ASSIGN(c.n_layers, positive_int(a, keys::kModelLayers));
  PLIMSOLL_ASSIGN(c.ffn_dim, positive_int(a, keys::kModelFfn));
  PLIMSOLL_ASSIGN(c.vocab_size, positive_int(a, keys::kModelVocab));
  PLIMSOLL_ASSIGN(c.max_seq_len, positive_int(a, keys::kModelContext));
  PLIMSOLL_TRY(read_heads(a, c));
  c.name = "declared by annotations";
  return c;
}

// model-weights-bytes when given, else params x the dtype's bytes per element.
Result<int64_t> read_weights_bytes(const Annotations& a) {
  if (auto it = a.find(keys::kModelWeightsBytes); it != a.end()) {
    auto b = parse_bytes(it->second);
    if (!b) return bad(keys::kModelWeightsBytes, it->second, b.error().message);
    return *b;
  }
  auto params_it = a.find(keys::kModelParams);
  auto dtype_it = a.find(keys::kModelDtype);
  if (params_it == a.end() || dtype_it == a.end()) {
    return make_error(ErrorCode::kNotFound, std::string("annotations ") + keys::kModelParams + " and " +
                                                keys::kModelDtype + " (or " + keys::kModelWeightsBytes +
                                                ") are missing");
  }
  PLIMSOLL_ASSIGN(const int64_t params, parse_param_count(params_it->second));
  const auto dtype = dtype_from_name(dtype_it->second);
  if (!dtype) return bad(keys::kModelDtype, dtype_it->second, "unknown dtype (f32, f16, bf16, q8_0, q4_0, q4_k, ...)");
  const DTypeTraits& t = dtype_traits(*dtype);
  return (params + t.block_elems - 1) / t.block_elems * t.block_bytes;
}

}  // namespace

bool declares_model(const Annotations& annotations) {
  for (const auto& [key, value] : annotations) {
    if (key.rfind("plimsoll.dev/model-", 0) == 0) return true;
  }
  return false;
}

Result<int64_t> parse_param_count(const std::string& text) {
  char* end = nullptr;
  const double n = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(n) || n <= 0) return bad(keys::kModelParams, text, "not a count");
  const std::string suffix(end);
  double factor = 1;
  if (suffix == "K" || suffix == "k") factor = 1e3;
  else if (suffix == "M") factor = 1e6;
  else if (suffix == "B" || suffix == "G") factor = 1e9;
  else if (suffix == "T") factor = 1e12;
  else if (!suffix.empty()) return bad(keys::kModelParams, text, "suffix must be K, M, B or T");
  if (n * factor >= 9e18) return bad(keys::kModelParams, text, "too large");
  return static_cast<int64_t>(std::llround(n * factor));
}

Result<int64_t> parse_cpu_count(const std::string& text) {
  char* end = nullptr;
  const double n = std::strtod(text.c_str(), &end);
  const std::string suffix(end);
  if (end == text.c_str() || !std::isfinite(n) || n <= 0 || n > 1e6 || (suffix != "" && suffix != "m")) {
    return make_error(ErrorCode::kInvalidArgument, "'" + text + "' is not a CPU quantity (2, 500m, 1.5)");
  }
  const double cpus = suffix == "m" ? n / 1000 : n;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(cpus)));
}

Result<ModelMetadata> read_model_metadata(const Annotations& a) {
  ModelMetadata m;
  PLIMSOLL_ASSIGN(m.config, read_config(a));
  PLIMSOLL_ASSIGN(m.weights_bytes, read_weights_bytes(a));
  if (auto it = a.find(keys::kRuntimeBytes); it != a.end()) {
    auto b = parse_bytes(it->second);
    if (!b) return bad(keys::kRuntimeBytes, it->second, b.error().message);
    m.runtime_bytes = *b;
  }
  return m;
}

}  // namespace plimsoll::webhook
