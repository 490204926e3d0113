// UTF-8 scanning for the tokenizer: one well-formed character, invalid
// subpart or truncated tail at a time, and lossy decoding with U+FFFD.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace plimsoll {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

enum class Utf8StepKind {
  kChar,       // a well-formed character of length_bytes (1..4)
  kInvalid,    // a maximal ill-formed subpart of length_bytes: one U+FFFD
  kTruncated,  // the rest of the input (length_bytes) is a valid but incomplete prefix
};

struct Utf8Step {
  Utf8StepKind kind = Utf8StepKind::kChar;
  size_t length_bytes = 0;
};

// Classifies the bytes at `pos` (< bytes.size()) by Unicode's well-formed byte
// sequence table (no overlongs, no surrogates, nothing above U+10FFFF).
Utf8Step utf8_step(std::string_view bytes, size_t pos);

// Decodes bytes, replacing each maximal ill-formed subpart (and a truncated
// tail) with one U+FFFD; the "substitution of maximal subparts" practice.
std::string utf8_lossy(std::string_view bytes);

}  // namespace plimsoll
