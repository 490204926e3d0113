// Test helper: the vocab-only GGUF convert_hf_to_gguf.py writes for a BPE
// tokenizer.json: one token list (added tokens included, gaps padded with
// "[PAD<i>]" of unused type), merges as "a b", control type for special added
// tokens, user-defined for the others, and the given tokenizer.ggml.pre.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "formats/gguf_writer.h"

namespace plimsoll::testing {

// `config`: tokenizer_config.json (its bos_token / eos_token name the ids), or {}.
// add_bos: tokenizer.ggml.add_bos_token, left out when unset.
inline GgufWriter gguf_from_tokenizer_json(const nlohmann::json& tok, const nlohmann::json& config,
                                           const std::string& pre, std::optional<bool> add_bos) {
  using nlohmann::json;
  size_t n = 0;
  for (const auto& [piece, id] : tok["model"]["vocab"].items()) n = std::max(n, id.get<size_t>() + 1);
  for (const json& a : tok["added_tokens"]) n = std::max(n, a["id"].get<size_t>() + 1);
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n, 1);
  for (size_t i = 0; i < n; ++i) {  // (no "[PAD" + ...: GCC 12 -Wrestrict false positive)
    tokens[i] = std::to_string(i);
    tokens[i].insert(0, "[PAD");
    tokens[i].push_back(']');
    types[i] = 5;
  }
  for (const auto& [piece, id] : tok["model"]["vocab"].items()) tokens[id.get<size_t>()] = piece, types[id.get<size_t>()] = 1;
  for (const json& a : tok["added_tokens"]) {
    tokens[a["id"].get<size_t>()] = a["content"].get<std::string>();
    types[a["id"].get<size_t>()] = a["special"].get<bool>() ? 3 : 4;
  }
  std::vector<std::string> merges;
  for (const json& m : tok["model"]["merges"]) {
    merges.push_back(m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>());
  }
  auto id_of = [&](const char* key) -> int64_t {
    if (!config.contains(key) || !config[key].is_string()) return -1;
    for (size_t i = 0; i < n; ++i) if (tokens[i] == config[key].get<std::string>()) return static_cast<int64_t>(i);
    return -1;
  };
  GgufWriter w;
  (void)w.set("general.architecture", GgufValue(std::string("llama")));
  (void)w.set("tokenizer.ggml.model", GgufValue(std::string("gpt2")));
  (void)w.set("tokenizer.ggml.pre", GgufValue(pre));
  (void)w.set("tokenizer.ggml.tokens", GgufValue(GgufArray{tokens}));
  (void)w.set("tokenizer.ggml.token_type", GgufValue(GgufArray{types}));
  (void)w.set("tokenizer.ggml.merges", GgufValue(GgufArray{merges}));
  if (id_of("bos_token") >= 0) (void)w.set("tokenizer.ggml.bos_token_id", GgufValue(uint32_t(id_of("bos_token"))));
  if (id_of("eos_token") >= 0) (void)w.set("tokenizer.ggml.eos_token_id", GgufValue(uint32_t(id_of("eos_token"))));
  if (add_bos) (void)w.set("tokenizer.ggml.add_bos_token", GgufValue(*add_bos));
  return w;
}

}  // namespace plimsoll::testing
