// LoadedModel and load_model(): open any supported model (llama2.c checkpoint,
// GGUF, Hugging Face folder) into config + tensors (+ vocabulary, settings).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/result.h"
#include "formats/gguf.h"
#include "core/generation_defaults.h"
#include "core/model_config.h"
#include "formats/tensor_store.h"
#include "formats/vocab.h"

namespace plimsoll {

enum class ModelFormat { kLlama2c, kGguf, kHfSafetensors };

struct LoadedModel {
  ModelFormat format = ModelFormat::kGguf;
  std::string path;
  ModelConfig config;
  TensorStore tensors;          // GGUF tensor names (token_embd.weight, blk.N.attn_q.weight, ...)
  std::optional<Vocab> vocab;   // present when the file carries one (GGUF)
  // Hugging Face folders: generation_config.json / tokenizer_config.json when present;
  // a GGUF's tokenizer.chat_template lands in tokenizer_settings->chat_template.
  std::optional<GenerationDefaults> generation_defaults;
  std::optional<TokenizerSettings> tokenizer_settings;
};

// A directory is a Hugging Face model folder (config.json + safetensors, see
// formats/hf_model.h). Otherwise detects the format from the file's content
// (GGUF magic, else a llama2.c checkpoint), maps the file and returns views into the mapping (kept alive
// by the store). Errors: kIo (open/mmap), kInvalidFile (corrupt, truncated,
// wrong shapes; the message names the file and the problem), kUnsupported
// (unknown architecture, tokenizer model or tensor type, naming it).
// backing: how a GGUF or llama2.c file's bytes are held (Hugging Face folders
// are always mapped).
Result<LoadedModel> load_model(const std::string& path, FileBacking backing = FileBacking::kMapped);

// The same from bytes in memory (fuzzing, tests): views point into `bytes`,
// which must outlive the model. `name` is used as path and in errors.
Result<LoadedModel> parse_model(std::span<const std::byte> bytes, const std::string& name);

// GGUF -> LoadedModel (architectures "llama", "gpt2", "bloom"); views point into `bytes`,
// the span `gguf` was parsed from.
Result<LoadedModel> model_from_gguf(const GgufFile& gguf, std::span<const std::byte> bytes);
// tokenizer.ggml.* -> Vocab; nullopt when the file has no tokenizer.ggml.tokens.
Result<std::optional<Vocab>> vocab_from_gguf(const GgufFile& gguf);

// Checks every tensor the config's architecture needs is in `tensors` with the
// shape the config implies and a usable dtype (norms and biases F32; q/k/v split
// or fused as attn_qkv). `path` names the file in errors.
Status validate_decoder_tensors(const ModelConfig& config, const TensorStore& tensors,
                                const std::string& path);

// Loads a vocabulary from a GGUF file (its tokenizer.ggml.* keys; a model or a
// vocabulary-only file), or a llama2.c tokenizer (tokenizer.bin), which does
// not store its size: then every entry to the end of the file.
Result<Vocab> load_vocab(const std::string& path);
// As above, and for a llama2.c tokenizer reads `expected_vocab_size` entries
// (take it from the model: config.vocab_size). For a GGUF the vocabulary must
// have exactly that many entries (kInvalidFile otherwise); pass 0 to skip the check.
Result<Vocab> load_vocab(const std::string& path, int64_t expected_vocab_size);

}  // namespace plimsoll
