// Hugging Face tensor names -> GGUF names per architecture, and the load-time
// transforms (Conv1D transpose, BLOOM q/k/v row order, f32 norms and biases).
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>

#include "core/half.h"
#include "formats/hf_model.h"

namespace plimsoll {
namespace {

enum class Transform { kNone, kTranspose, kBloomQkv };

struct Target {
  std::string name;  // GGUF name
  Transform transform = Transform::kNone;
};

using Table = std::map<std::string, Target>;

const Table& llama_layer_table() {
  static const Table t = {
      {"input_layernorm.weight", {"attn_norm.weight"}},
      {"self_attn.q_proj.weight", {"attn_q.weight"}},   {"self_attn.q_proj.bias", {"attn_q.bias"}},
      {"self_attn.k_proj.weight", {"attn_k.weight"}},   {"self_attn.k_proj.bias", {"attn_k.bias"}},
      {"self_attn.v_proj.weight", {"attn_v.weight"}},   {"self_attn.v_proj.bias", {"attn_v.bias"}},
      {"self_attn.o_proj.weight", {"attn_output.weight"}}, {"self_attn.o_proj.bias", {"attn_output.bias"}},
      {"post_attention_layernorm.weight", {"ffn_norm.weight"}},
      {"mlp.gate_proj.weight", {"ffn_gate.weight"}},    {"mlp.gate_proj.bias", {"ffn_gate.bias"}},
      {"mlp.up_proj.weight", {"ffn_up.weight"}},        {"mlp.up_proj.bias", {"ffn_up.bias"}},
      {"mlp.down_proj.weight", {"ffn_down.weight"}},    {"mlp.down_proj.bias", {"ffn_down.bias"}},
      {"self_attn.rotary_emb.inv_freq", {""}},  // a buffer some checkpoints carry: ignored
  };
  return t;
}

const Table& gpt2_layer_table() {
  static const Table t = {
      {"ln_1.weight", {"attn_norm.weight"}}, {"ln_1.bias", {"attn_norm.bias"}},
      {"attn.c_attn.weight", {"attn_qkv.weight", Transform::kTranspose}},
      {"attn.c_attn.bias", {"attn_qkv.bias"}},
      {"attn.c_proj.weight", {"attn_output.weight", Transform::kTranspose}},
      {"attn.c_proj.bias", {"attn_output.bias"}},
      {"ln_2.weight", {"ffn_norm.weight"}}, {"ln_2.bias", {"ffn_norm.bias"}},
      {"mlp.c_fc.weight", {"ffn_up.weight", Transform::kTranspose}}, {"mlp.c_fc.bias", {"ffn_up.bias"}},
      {"mlp.c_proj.weight", {"ffn_down.weight", Transform::kTranspose}},
      {"mlp.c_proj.bias", {"ffn_down.bias"}},
      {"attn.bias", {""}}, {"attn.masked_bias", {""}},  // causal-mask buffers: ignored
  };
  return t;
}

const Table& bloom_layer_table() {
  static const Table t = {
      {"input_layernorm.weight", {"attn_norm.weight"}}, {"input_layernorm.bias", {"attn_norm.bias"}},
      {"self_attention.query_key_value.weight", {"attn_qkv.weight", Transform::kBloomQkv}},
      {"self_attention.query_key_value.bias", {"attn_qkv.bias", Transform::kBloomQkv}},
      {"self_attention.dense.weight", {"attn_output.weight"}},
      {"self_attention.dense.bias", {"attn_output.bias"}},
      {"post_attention_layernorm.weight", {"ffn_norm.weight"}},
      {"post_attention_layernorm.bias", {"ffn_norm.bias"}},
      {"mlp.dense_h_to_4h.weight", {"ffn_up.weight"}}, {"mlp.dense_h_to_4h.bias", {"ffn_up.bias"}},
      {"mlp.dense_4h_to_h.weight", {"ffn_down.weight"}}, {"mlp.dense_4h_to_h.bias", {"ffn_down.bias"}},
  };
  return t;
}

const Table& top_table(const ModelConfig& c) {
  static const Table llama = {{"model.embed_tokens.weight", {"token_embd.weight"}},
                              {"model.norm.weight", {"output_norm.weight"}},
                              {"lm_head.weight", {"output.weight"}}};
  static const Table gpt2 = {{"wte.weight", {"token_embd.weight"}},
                             {"wpe.weight", {"position_embd.weight"}},
                             {"ln_f.weight", {"output_norm.weight"}}, {"ln_f.bias", {"output_norm.bias"}},
                             {"lm_head.weight", {""}}};  // tied to wte
  static const Table bloom = {{"word_embeddings.weight", {"token_embd.weight"}},
                              {"word_embeddings_layernorm.weight", {"token_embd_norm.weight"}},
                              {"word_embeddings_layernorm.bias", {"token_embd_norm.bias"}},
                              {"ln_f.weight", {"output_norm.weight"}}, {"ln_f.bias", {"output_norm.bias"}},
                              {"lm_head.weight", {""}}};  // tied to word_embeddings
  return c.arch == "gpt2" ? gpt2 : c.arch == "bloom" ? bloom : llama;
}

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

// The target of an HF tensor name; an empty name means "ignore"; nullopt: unknown.
std::optional<Target> map_name(const ModelConfig& c, const std::string& hf_name) {
  const bool llama = c.arch == "llama";
  std::string name = hf_name;
  if (!llama && name.compare(0, 12, "transformer.") == 0) name = name.substr(12);
  const Table& top = top_table(c);
  if (auto it = top.find(name); it != top.end()) {
    if (llama && name == "lm_head.weight" && c.tied_embeddings) return Target{""};
    return it->second;
  }
  const auto layer = split_layer(name, llama ? "model.layers." : "h.");
  if (!layer || layer->first >= c.n_layers) return std::nullopt;
  const Table& t = llama ? llama_layer_table() : c.arch == "gpt2" ? gpt2_layer_table() : bloom_layer_table();
  auto it = t.find(layer->second);
  if (it == t.end()) return std::nullopt;
  if (it->second.name.empty()) return it->second;
  return Target{"blk." + std::to_string(layer->first) + "." + it->second.name, it->second.transform};
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
    const int64_t n_bytes = static_cast<int64_t>(o.bytes.size());
    const std::byte* data = store.adopt(std::move(o.bytes));
    added = store.add(TensorView{target.name, o.dtype, o.shape, data, n_bytes});
  }
  if (!added.ok()) return added.error().with_context(t.file + ": tensor '" + t.name + "'");
  return {};
}

}  // namespace

std::string hf_tensor_name(const ModelConfig& c, const std::string& gguf_name) {
  const std::string prefix = c.arch == "llama" ? "" : "[transformer.]";
  for (const auto& [hf, target] : top_table(c)) {
    if (target.name == gguf_name) return (c.arch == "llama" || hf == "lm_head.weight" ? "" : prefix) + hf;
  }
  const auto layer = split_layer(gguf_name, "blk.");
  if (!layer) return "";
  const Table& t = c.arch == "llama" ? llama_layer_table() : c.arch == "gpt2" ? gpt2_layer_table() : bloom_layer_table();
  for (const auto& [hf, target] : t) {
    if (target.name == layer->second) {
      return prefix + (c.arch == "llama" ? "model.layers." : "h.") + std::to_string(layer->first) + "." + hf;
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
