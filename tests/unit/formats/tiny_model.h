// Test helper: builds a tiny, valid llama GGUF (and variants broken on purpose)
// in memory with GgufWriter; shared by the formats tests and the fuzz seed generator.
#pragma once

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "formats/gguf_writer.h"

namespace plimsoll::testing {

struct TinySpec {
  int64_t dim = 8, ffn = 16, layers = 2, heads = 2, kv_heads = 1, vocab = 8, ctx = 16;
  bool with_output = true;
  std::string arch = "llama";
  std::string tokenizer = "llama";
  std::string skip_tensor;             // leave this tensor out
  std::string reshape_tensor;          // give this tensor `reshape` instead
  std::vector<int64_t> reshape;
  DType norm_dtype = DType::kF32;
  DType weight_dtype = DType::kF32;
};

// Deterministic values for tensor number `seed`.
inline GgufWriter::TensorProducer tiny_values(DType dtype, int seed) {
  return [dtype, seed](std::span<std::byte> out) -> Status {
    if (dtype == DType::kF32) {
      for (size_t i = 0; i < out.size() / 4; ++i) {
        const float v = std::sin(static_cast<float>(i) * 0.37f + static_cast<float>(seed));
        std::memcpy(out.data() + 4 * i, &v, 4);
      }
    } else {
      for (size_t i = 0; i < out.size(); ++i) out[i] = std::byte(((i * 7 + seed) % 0x3b) & 0xff);
    }
    return {};
  };
}

inline void tiny_add(GgufWriter& w, const TinySpec& s, const std::string& name,
                     std::vector<int64_t> shape, bool norm, int seed) {
  if (name == s.skip_tensor) return;
  if (name == s.reshape_tensor) shape = s.reshape;
  const DType dt = norm ? s.norm_dtype : s.weight_dtype;
  (void)w.add_tensor(name, dt, shape, tiny_values(dt, seed));
}

inline GgufWriter tiny_llama_writer(const TinySpec& s = {}) {
  GgufWriter w;
  (void)w.set("general.architecture", GgufValue(s.arch));
  (void)w.set("general.name", GgufValue(std::string("tiny")));
  (void)w.set("llama.context_length", GgufValue(uint32_t(s.ctx)));
  (void)w.set("llama.embedding_length", GgufValue(uint32_t(s.dim)));
  (void)w.set("llama.feed_forward_length", GgufValue(uint32_t(s.ffn)));
  (void)w.set("llama.block_count", GgufValue(uint32_t(s.layers)));
  (void)w.set("llama.attention.head_count", GgufValue(uint32_t(s.heads)));
  (void)w.set("llama.attention.head_count_kv", GgufValue(uint32_t(s.kv_heads)));
  (void)w.set("llama.attention.layer_norm_rms_epsilon", GgufValue(1e-5f));
  (void)w.set("tokenizer.ggml.model", GgufValue(s.tokenizer));
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (int64_t i = 0; i < s.vocab; ++i) {
    std::string piece = std::to_string(i);  // (no "t" + ...: GCC 12 -Wrestrict false positive)
    piece.insert(piece.begin(), 't');
    tokens.push_back(i == 0 ? "<unk>" : i == 1 ? "<s>" : i == 2 ? "</s>" : piece);
    scores.push_back(-static_cast<float>(i));
    types.push_back(i == 0 ? 2 : i < 3 ? 3 : 1);
  }
  (void)w.set("tokenizer.ggml.tokens", GgufValue(GgufArray{tokens}));
  (void)w.set("tokenizer.ggml.scores", GgufValue(GgufArray{scores}));
  (void)w.set("tokenizer.ggml.token_type", GgufValue(GgufArray{types}));
  (void)w.set("tokenizer.ggml.bos_token_id", GgufValue(uint32_t(1)));
  (void)w.set("tokenizer.ggml.eos_token_id", GgufValue(uint32_t(2)));
  const int64_t d = s.dim, f = s.ffn, kv = s.kv_heads * (s.dim / s.heads);
  int seed = 0;
  tiny_add(w, s, "token_embd.weight", {s.vocab, d}, false, seed++);
  tiny_add(w, s, "output_norm.weight", {d}, true, seed++);
  if (s.with_output) tiny_add(w, s, "output.weight", {s.vocab, d}, false, seed++);
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    tiny_add(w, s, p + "attn_norm.weight", {d}, true, seed++);
    tiny_add(w, s, p + "attn_q.weight", {d, d}, false, seed++);
    tiny_add(w, s, p + "attn_k.weight", {kv, d}, false, seed++);
    tiny_add(w, s, p + "attn_v.weight", {kv, d}, false, seed++);
    tiny_add(w, s, p + "attn_output.weight", {d, d}, false, seed++);
    tiny_add(w, s, p + "ffn_norm.weight", {d}, true, seed++);
    tiny_add(w, s, p + "ffn_gate.weight", {f, d}, false, seed++);
    tiny_add(w, s, p + "ffn_up.weight", {f, d}, false, seed++);
    tiny_add(w, s, p + "ffn_down.weight", {d, f}, false, seed++);
  }
  return w;
}

inline std::vector<std::byte> tiny_llama_gguf(const TinySpec& s = {}) {
  return tiny_llama_writer(s).to_bytes().value();
}

// A llama2.c checkpoint with the same hyper-parameters (F32, deterministic values).
inline std::vector<std::byte> tiny_llama2c(const TinySpec& s = {}, bool shared = true) {
  const int32_t header[7] = {int32_t(s.dim),      int32_t(s.ffn),   int32_t(s.layers),
                             int32_t(s.heads),    int32_t(s.kv_heads),
                             int32_t(shared ? s.vocab : -s.vocab), int32_t(s.ctx)};
  const int64_t d = s.dim, f = s.ffn, L = s.layers, kv = s.kv_heads * (s.dim / s.heads);
  const int64_t hs = s.dim / s.heads;
  int64_t floats = s.vocab * d + L * (2 * d + 2 * d * d + 2 * kv * d + 3 * f * d) + d +
                   2 * (s.ctx * hs / 2) + (shared ? 0 : s.vocab * d);
  std::vector<std::byte> out(sizeof(header) + static_cast<size_t>(floats) * 4);
  std::memcpy(out.data(), header, sizeof(header));
  for (int64_t i = 0; i < floats; ++i) {
    const float v = std::cos(static_cast<float>(i) * 0.01f);
    std::memcpy(out.data() + sizeof(header) + 4 * i, &v, 4);
  }
  return out;
}

}  // namespace plimsoll::testing
