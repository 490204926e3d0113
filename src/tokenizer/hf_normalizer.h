// Normalizers of tokenizer.json ("normalizer"): NFC/NFD/NFKC/NFKD, Prepend,
// Replace (string or regex) and Sequence, applied to text between added tokens.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "tokenizer/hf_json.h"
#include "tokenizer/hf_regex.h"

namespace plimsoll::hf {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // `text` is valid UTF-8; so is the result.
  virtual std::string normalize(std::string_view text) const = 0;
};

// From the JSON object at `where` (e.g. "tokenizer.json: normalizer").
// kUnsupported names the type; a null normalizer is handled by the caller.
Result<std::unique_ptr<Normalizer>> make_normalizer(const Json& json, const std::string& where);

// The "pattern" member ({"String": ..} or {"Regex": ..}) of Replace and Split.
Result<HfRegex> compile_pattern(const Json& json, const std::string& where);

// Unicode normalization through ICU; form is "NFC", "NFD", "NFKC" or "NFKD".
Result<std::string> unicode_normalize(std::string_view text, std::string_view form);

}  // namespace plimsoll::hf
