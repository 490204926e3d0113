// LoadedModel and load_model(): open any supported model file (llama2.c
// checkpoint, GGUF) into config + tensors (+ vocabulary when the file has one).
#pragma once

#include <optional>
#include <string>

#include "core/result.h"
#include "formats/model_config.h"
#include "formats/tensor_store.h"
#include "formats/vocab.h"

namespace plimsoll {

enum class ModelFormat { kLlama2c, kGguf };

struct LoadedModel {
  ModelFormat format = ModelFormat::kGguf;
  std::string path;
  ModelConfig config;
  TensorStore tensors;          // GGUF tensor names (token_embd.weight, blk.N.attn_q.weight, ...)
  std::optional<Vocab> vocab;   // present when the file carries one (GGUF)
};

// Detects the format from the file's first bytes.
Result<LoadedModel> load_model(const std::string& path);
// Loads a vocabulary from a separate tokenizer file (llama2.c tokenizer.bin, or a GGUF).
Result<Vocab> load_vocab(const std::string& path);

}  // namespace plimsoll
