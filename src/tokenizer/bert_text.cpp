// BertNormalizer and BertPreTokenizer over ICU's character properties
// (u_charType, u_isUWhiteSpace, u_ispunct) and case mapping.
#include "tokenizer/bert_text.h"

#include <unicode/uchar.h>
#include <unicode/ustring.h>
#include <unicode/utf8.h>

#include "tokenizer/hf_normalizer.h"

namespace plimsoll {
namespace {

// Calls f(code_point) for each character of valid UTF-8.
template <typename F>
void for_each_char(std::string_view text, F f) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const auto n = static_cast<int32_t>(text.size());
  for (int32_t i = 0; i < n;) {
    UChar32 c = 0;
    U8_NEXT(s, i, n, c);
    if (c >= 0) f(c);
  }
}

void append_char(std::string* out, UChar32 c) {
  uint8_t buffer[U8_MAX_LENGTH];
  int32_t length = 0;
  UBool error = false;
  U8_APPEND(buffer, length, U8_MAX_LENGTH, c, error);
  if (!error) out->append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(length));
}

// Rust's char::is_whitespace (the White_Space property) plus tab and newlines.
bool is_whitespace(UChar32 c) { return u_isUWhiteSpace(c) != 0; }

// Hugging Face's is_control: the "other" categories, tab and newlines aside.
bool is_control(UChar32 c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (u_charType(c)) {
    case U_CONTROL_CHAR: case U_FORMAT_CHAR: case U_SURROGATE: case U_PRIVATE_USE_CHAR: case U_UNASSIGNED:
      return true;
    default:
      return false;
  }
}

bool is_cjk(UChar32 c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// ASCII punctuation (symbols such as $ + < included) or Unicode punctuation.
bool is_punctuation(UChar32 c) {
  if (c < 0x80) return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
                       (c >= 0x7B && c <= 0x7E);
  return u_ispunct(c) != 0;
}

// Full lowercase mapping of one character, without context (no final sigma).
void append_lower(std::string* out, UChar32 c) {
  UChar in[2];
  int32_t in_length = 0;
  UBool error = false;
  U16_APPEND(in, in_length, 2, c, error);
  if (error) return append_char(out, c);
  UChar lower[8];
  UErrorCode status = U_ZERO_ERROR;
  const int32_t n = u_strToLower(lower, 8, in, in_length, "", &status);
  if (U_FAILURE(status)) return append_char(out, c);
  for (int32_t i = 0; i < n;) {
    UChar32 d = 0;
    U16_NEXT(lower, i, n, d);
    append_char(out, d);
  }
}

}  // namespace

std::string bert_normalize(std::string_view text) {
  std::string cleaned;
  for_each_char(text, [&](UChar32 c) {
    if (c == 0 || c == 0xFFFD || is_control(c)) return;
    if (is_whitespace(c)) {
      cleaned += ' ';
    } else if (is_cjk(c)) {
      cleaned += ' ';
      append_char(&cleaned, c);
      cleaned += ' ';
    } else {
      append_char(&cleaned, c);
    }
  });
  Result<std::string> nfd = hf::unicode_normalize(cleaned, "NFD");
  const std::string decomposed = nfd.ok() ? std::move(nfd).value() : cleaned;
  std::string out;
  for_each_char(decomposed, [&](UChar32 c) {
    if (u_charType(c) != U_NON_SPACING_MARK) append_lower(&out, c);
  });
  return out;
}

std::vector<std::string> bert_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for_each_char(text, [&](UChar32 c) {
    if (is_whitespace(c)) {
      flush();
    } else if (is_punctuation(c)) {
      flush();
      append_char(&word, c);
      flush();
    } else {
      append_char(&word, c);
    }
  });
  flush();
  return words;
}

}  // namespace plimsoll
