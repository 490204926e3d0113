// Test helper: tiny Hugging Face model folders (config.json + safetensors,
// single or sharded with an index), for the formats and hub tests.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "safetensors_writer.h"

namespace plimsoll::testing {

// A one-layer GPT-2 (d 4, ffn 8, vocab 6) with Conv1D weights; biases in `bias_dtype`.
inline std::vector<StTensor> gpt2_tensors(const std::string& bias_dtype = "F32") {
  const int64_t d = 4, f = 8;
  std::vector<StTensor> t = {{"wte.weight", "F32", {6, d}, iota(6 * d)},
                             {"wpe.weight", "F32", {8, d}, iota(8 * d)},
                             {"ln_f.weight", "F32", {d}, iota(d)},
                             {"ln_f.bias", "F32", {d}, iota(d)}};
  const std::string p = "h.0.";
  t.push_back({p + "ln_1.weight", "F32", {d}, iota(d)});
  t.push_back({p + "ln_1.bias", "F32", {d}, iota(d)});
  t.push_back({p + "attn.c_attn.weight", "F32", {d, 3 * d}, iota(3 * d * d)});
  t.push_back({p + "attn.c_attn.bias", bias_dtype, {3 * d}, iota(3 * d, 0.5f)});
  t.push_back({p + "attn.c_proj.weight", "F32", {d, d}, iota(d * d)});
  t.push_back({p + "attn.c_proj.bias", "F32", {d}, iota(d)});
  t.push_back({p + "ln_2.weight", "F32", {d}, iota(d)});
  t.push_back({p + "ln_2.bias", "F32", {d}, iota(d)});
  t.push_back({p + "mlp.c_fc.weight", "F32", {d, f}, iota(d * f)});
  t.push_back({p + "mlp.c_fc.bias", "F32", {f}, iota(f)});
  t.push_back({p + "mlp.c_proj.weight", "F32", {f, d}, iota(f * d)});
  t.push_back({p + "mlp.c_proj.bias", "F32", {d}, iota(d)});
  return t;
}

inline const char* kGpt2Config =
    R"({"model_type": "gpt2", "n_embd": 4, "n_head": 2, "n_layer": 1, "n_positions": 8, "vocab_size": 6, "n_inner": 8})";

// config.json + model.safetensors in `dir`.
inline void write_hf_folder(const std::string& dir, const std::string& config, const std::vector<StTensor>& tensors) {
  write_text(dir + "/config.json", config);
  write_bytes(dir + "/model.safetensors", st_bytes(tensors));
}

// config.json + model-0000i-of-0000n.safetensors shards + model.safetensors.index.json.
inline void write_sharded_hf_folder(const std::string& dir, const std::string& config,
                                    const std::vector<StTensor>& tensors, size_t n_shards) {
  write_text(dir + "/config.json", config);
  nlohmann::json map = nlohmann::json::object();
  for (size_t s = 0; s < n_shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, n_shards);
    std::vector<StTensor> part;
    for (size_t i = s; i < tensors.size(); i += n_shards) {
      part.push_back(tensors[i]);
      map[tensors[i].name] = name;
    }
    write_bytes(dir + "/" + name, st_bytes(part));
  }
  write_text(dir + "/model.safetensors.index.json", nlohmann::json{{"weight_map", map}}.dump());
}

}  // namespace plimsoll::testing
