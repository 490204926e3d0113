// HfRegex: the Unicode regular expressions of tokenizer.json (Split patterns,
// the GPT-2 ByteLevel pattern, Replace), compiled by PCRE2 with UTF and UCP.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace plimsoll::hf {

struct ByteRange {
  size_t begin = 0;  // byte offsets into the searched text
  size_t end = 0;
};

class HfRegex {
 public:
  // A regex pattern (literal=false) or a plain string to find (literal=true).
  // Errors name `where` and PCRE2's message with the offset.
  static Result<HfRegex> compile(std::string_view pattern, bool literal, const std::string& where);

  // Successive non-overlapping matches in `text` (valid UTF-8), left to right;
  // an empty match advances one character and is not reported.
  std::vector<ByteRange> find_all(std::string_view text) const;

 private:
  struct Code;
  explicit HfRegex(std::shared_ptr<const Code> code) : code_(std::move(code)) {}
  std::shared_ptr<const Code> code_;
};

// GPT-2's pre-tokenization pattern (ByteLevel with use_regex).
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace plimsoll::hf
