// The pre-tokenizers llama.cpp names in a GGUF's tokenizer.ggml.pre, each as
// the tokenizer.json parts it stands for (normalizer, pre_tokenizer and the BPE
// model's ignore_merges), so that a GGUF byte-level vocabulary runs on the
// same HfTokenizer code as the model's own tokenizer.json.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "tokenizer/hf_json.h"

namespace plimsoll {

struct GgufPreTokenizer {
  hf::Json normalizer;     // null: none
  hf::Json pre_tokenizer;  // a tokenizer.json "pre_tokenizer" object
  bool ignore_merges = false;  // a word that is a whole token is that token (Llama 3, Tekken)
  bool add_bos = false;        // llama.cpp's default for tokenizer.ggml.add_bos_token
};

// The pre-tokenizer named `name` ("" reads as "default", as llama.cpp does).
// kUnsupported for an unknown name: "<file_name>: tokenizer.ggml.pre '<name>'
// is not supported (known: ...)".
Result<GgufPreTokenizer> gguf_pre_tokenizer(std::string_view name, const std::string& file_name);

// Every name gguf_pre_tokenizer knows, in table order.
std::vector<std::string> gguf_pre_tokenizer_names();

}  // namespace plimsoll
