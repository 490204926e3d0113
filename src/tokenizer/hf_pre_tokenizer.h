// Pre-tokenizers of tokenizer.json ("pre_tokenizer"): Split, ByteLevel,
// Metaspace, Digits and Sequence; they cut normalized text into words for BPE.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "tokenizer/hf_json.h"

namespace plimsoll::hf {

struct PreToken {
  std::string text;
  bool at_text_start = false;  // begins at offset 0 of the encoded text (Metaspace "first")
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces each piece by the pieces it splits into (empty pieces dropped).
  virtual void pre_tokenize(std::vector<PreToken>* pieces) const = 0;
};

// From the JSON object at `where` (e.g. "tokenizer.json: pre_tokenizer").
Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const Json& json, const std::string& where);

}  // namespace plimsoll::hf
