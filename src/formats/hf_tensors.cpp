// Hugging Face tensor names -> GGUF names through the architecture description, and the load-time
// transforms (Conv1D transpose, BLOOM q/k/v row order, f32 norms and biases, Gemma's 1 + w norms).
#include <cstdint>
#include <cstring>
#include <optional>

#include "core/half.h"
#include "formats/architecture.h"
#include "formats/hf_model.h"

namespace plimsoll {
namespace {

using Transform = HfTransform;

struct Target {
  std::string name;  // GGUF name; "" means "ignore"
  Transform transform = Transform::kNone;
};

// "<prefix><N>.<rest>" -> (N, rest) when `name` starts with prefix and a number.
std::optional<std::pair<int64_t, std::string>> split_layer(const std::string& name,
                                                           const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  size_t i = prefix.size();
  int64_t n = 0;
  const size_t digits = i;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9' && i - digits < 6) n = n * 10 + (name[i++] - '0');
  if (i == digits || i >= name.size() || name[i] != '.') return std::nullopt;
  return std::make_pair(n, name.substr(i + 1));
}

bool ignored(const Architecture& a, const std::string& name) {
  for (const char* n : a.hf_ignored) {
    if (name == n) return true;
  }
  return false;
}

const Architecture& arch_of(const ModelConfig& c) {
  const Architecture* a = architecture_named(c.arch);
  return a ? *a : llama_architecture();  // configs come from config_from_hf: always known
}

// The target of an HF tensor name through the description; nullopt: unknown.
std::optional<Target> map_name(const ModelConfig& c, const std::string& hf_name) {
  const Architecture& a = arch_of(c);
  std::string name = hf_name;
  const std::string strip = a.hf_strip_prefix;
  if (!strip.empty() && name.compare(0, strip.size(), strip) == 0) name = name.substr(strip.size());
  if (ignored(a, name)) return Target{""};
  for (const TensorSpec& s : a.tensors) {
    if (s.per_layer || name != s.hf || *s.hf == '\0') continue;
    if (s.when == When::kUntied && c.tied_embeddings) return Target{""};  // a tied checkpoint's copy
    return Target{s.gguf, s.transform};
  }
  const auto layer = split_layer(name, a.hf_layer_prefix);
  if (!layer || layer->first >= c.n_layers) return std::nullopt;
  if (ignored(a, layer->second)) return Target{""};
  for (const TensorSpec& s : a.tensors) {
    if (!s.per_layer || *s.hf == '\0' || layer->second != s.hf) continue;
    return Target{"blk." + std::to_string(layer->first) + "." + s.gguf, s.transform};
  }
  return std::nullopt;
}

// ---- transforms on owned copies ---------------------------------------------

struct Owned {
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};

int64_t elem_bytes(DType d) { return d == DType::kF32 ? 4 : 2; }

Owned transpose(const Owned& in) {  // [R, C] -> [C, R]
  const int64_t rows = in.shape[0], cols = in.shape[1], e = elem_bytes(in.dtype);
  Owned out{in.dtype, {cols, rows}, std::vector<std::byte>(in.bytes.size())};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t col = 0; col < cols; ++col) {
      std::memcpy(&out.bytes[static_cast<size_t>((col * rows + r) * e)],
                  &in.bytes[static_cast<size_t>((r * cols + col) * e)], static_cast<size_t>(e));
    }
  }
  return out;
}

// Rows [n_heads, 3, head_dim] -> [3, n_heads, head_dim] (each row `cols` elements).
Owned bloom_qkv(const Owned& in, int64_t n_heads, int64_t head_dim) {
  const int64_t cols = in.shape.size() == 2 ? in.shape[1] : 1;
  const int64_t row_bytes = cols * elem_bytes(in.dtype);
  Owned out{in.dtype, in.shape, std::vector<std::byte>(in.bytes.size())};
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t j = 0; j < 3; ++j) {
      const int64_t src = (h * 3 + j) * head_dim, dst = (j * n_heads + h) * head_dim;
      std::memcpy(&out.bytes[static_cast<size_t>(dst * row_bytes)],
                  &in.bytes[static_cast<size_t>(src * row_bytes)], static_cast<size_t>(head_dim * row_bytes));
    }
  }
  return out;
}

Owned widen_to_f32(const Owned& in) {
  if (in.dtype == DType::kF32) return in;
  const size_t n = in.bytes.size() / 2;
  Owned out{DType::kF32, in.shape, std::vector<std::byte>(n * 4)};
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, &in.bytes[2 * i], 2);
    const float f = in.dtype == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
    std::memcpy(&out.bytes[4 * i], &f, 4);
  }
  return out;
}

// Gemma's norms: w -> 1 + w on a widened (f32) vector.
void plus_one(Owned& o) {
  for (size_t i = 0; i + 4 <= o.bytes.size(); i += 4) {
    float f;
    std::memcpy(&f, &o.bytes[i], 4);
    f += 1.0f;
    std::memcpy(&o.bytes[i], &f, 4);
  }
}

Status check_transform(const ModelConfig& c, const SafetensorsTensor& t, Transform tr) {
  const std::string where = t.file + ": tensor '" + t.name + "'";
  if (tr == Transform::kTranspose && t.shape.size() != 2) {
    return make_error(ErrorCode::kInvalidFile, where + " must be 2-D (a Conv1D weight [in, out]), has shape " +
                                                   shape_to_string(t.shape));
  }
  if (tr == Transform::kBloomQkv && (t.shape.empty() || t.shape[0] != 3 * c.dim || t.shape.size() > 2)) {
    return make_error(ErrorCode::kInvalidFile, where + " has shape " + shape_to_string(t.shape) +
                                                   ", expected " + std::to_string(3 * c.dim) + " rows");
  }
  if (tr == Transform::kPlusOne && t.shape.size() != 1) {
    return make_error(ErrorCode::kInvalidFile, where + " has shape " + shape_to_string(t.shape) +
                                                   ", expected a norm vector");
  }
  if (t.shape.empty() || t.shape.size() > 2) {
    return make_error(ErrorCode::kInvalidFile, where + " has shape " + shape_to_string(t.shape) +
                                                   ", expected 1 or 2 dimensions");
  }
  return {};
}

Status add_one(const ModelConfig& c, const SafetensorsTensor& t, const Target& target, TensorStore& store) {
  PLIMSOLL_TRY(check_transform(c, t, target.transform));
  const bool vector = t.shape.size() == 1;
  const bool aligned = reinterpret_cast<uintptr_t>(t.data) % static_cast<uintptr_t>(elem_bytes(t.dtype)) == 0;
  Status added;
  if (target.transform == Transform::kNone && aligned && (!vector || t.dtype == DType::kF32)) {
    added = store.add(TensorView{target.name, t.dtype, t.shape, t.data, t.n_bytes});
  } else {
    Owned o{t.dtype, t.shape, std::vector<std::byte>(t.data, t.data + t.n_bytes)};
    if (target.transform == Transform::kTranspose) o = transpose(o);
    if (target.transform == Transform::kBloomQkv) o = bloom_qkv(o, c.n_heads, c.head_dim());
    if (vector) o = widen_to_f32(o);
    if (target.transform == Transform::kPlusOne) plus_one(o);
    const int64_t n_bytes = static_cast<int64_t>(o.bytes.size());
    const std::byte* data = store.adopt(std::move(o.bytes));
    added = store.add(TensorView{target.name, o.dtype, o.shape, data, n_bytes});
  }
  if (!added.ok()) return added.error().with_context(t.file + ": tensor '" + t.name + "'");
  return {};
}

}  // namespace

std::string hf_tensor_name(const ModelConfig& c, const std::string& gguf_name) {
  const Architecture& a = arch_of(c);
  std::string prefix;  // "[transformer.]": optional in the checkpoint (appended, not "[" + ...: GCC 12 -Wrestrict)
  if (*a.hf_strip_prefix) prefix.append(1, '[').append(a.hf_strip_prefix).append(1, ']');
  const auto layer = split_layer(gguf_name, "blk.");
  for (const TensorSpec& s : a.tensors) {
    if (*s.hf == '\0') continue;
    if (!s.per_layer && gguf_name == s.gguf) return prefix + s.hf;
    if (s.per_layer && layer && layer->second == s.gguf) {
      return prefix + a.hf_layer_prefix + std::to_string(layer->first) + "." + s.hf;
    }
  }
  return "";
}

Status add_hf_tensors(const ModelConfig& c, SafetensorsSet set, TensorStore& store) {
  for (const SafetensorsTensor& t : set.tensors) {
    const std::optional<Target> target = map_name(c, t.name);
    if (!target) {
      return make_error(ErrorCode::kInvalidFile, t.file + ": tensor '" + t.name + "' is not part of a " +
                                                     c.arch + " model with " + std::to_string(c.n_layers) +
                                                     " layers");
    }
    if (target->name.empty()) continue;
    PLIMSOLL_TRY(add_one(c, t, *target, store));
  }
  for (auto& f : set.files) store.keep_alive(std::move(f));
  return {};
}

}  // namespace plimsoll
