// Choosing a model's tokenizer: --tokenizer FILE, else the Hugging Face
// folder's tokenizer.json, else the vocabulary inside the model file (GGUF
// "llama" -> SentencePiece Tokenizer, GGUF "gpt2" -> HfTokenizer); plus what
// chat templates need (the template, bos/eos strings). Shared by every command.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "formats/model_file.h"
#include "formats/vocab.h"
#include "tokenizer/text_tokenizer.h"

namespace plimsoll {

struct ModelTokenizer {
  std::unique_ptr<TextTokenizer> tokenizer;
  std::string source;                // what was loaded, for logs: "<dir>/tokenizer.json", "<file> (GGUF vocabulary)"
  std::string chat_template;         // the model's template ("" when it has none)
  std::string chat_template_source;  // where it came from, for errors and logs
  std::string bos_token;             // strings the template sees ("" when none)
  std::string eos_token;
};

// The tokenizer of a vocabulary stored in a model file: "llama" -> Tokenizer,
// "gpt2" -> HfTokenizer (see HfTokenizer::from_gguf_vocab). `file_name` names
// the file in errors.
Result<std::unique_ptr<TextTokenizer>> tokenizer_from_vocab(const Vocab& vocab, const std::string& file_name);

// A tokenizer with no model (`plimsoll tokenize`): a tokenizer.json (by its
// ".json" name or a '{' first; with the tokenizer_config.json beside it), a
// GGUF's vocabulary (a vocabulary-only file, or a model's, its tensors
// unread) with its tokenizer.chat_template, or a llama2.c tokenizer.bin
// (every entry in the file).
Result<ModelTokenizer> load_tokenizer_alone(const std::string& path);

// Whether the file at `path` is a tokenizer and no model: a tokenizer.json, or
// a GGUF that has no tensors (llama.cpp's vocabulary-only files).
bool is_tokenizer_file(const std::string& path);

// The tokenizer for `model`, in this order:
//  1. `tokenizer_path` when not empty: a tokenizer.json (by its ".json" name or
//     a '{' first) -> HfTokenizer, with the tokenizer_config.json beside it when
//     there is one; otherwise a GGUF or llama2.c tokenizer.bin vocabulary;
//  2. a Hugging Face folder's tokenizer.json (+ tokenizer_config.json);
//  3. the model file's own vocabulary (GGUF).
// The chat template: tokenizer_config.json's chat_template (a named list: the
// "default"), else the folder's chat_template.jinja, else GGUF
// tokenizer.chat_template. Fails naming the file when none is found or the
// tokenizer has more ids than the model's embedding has rows.
Result<ModelTokenizer> load_model_tokenizer(const LoadedModel& model, const std::string& tokenizer_path);

}  // namespace plimsoll
