// Added tokens of tokenizer.json ("added_tokens"): found in the text before the
// model runs (leftmost, longest), with lstrip/rstrip taking nearby whitespace.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "tokenizer/hf_json.h"

namespace plimsoll::hf {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

// The "added_tokens" list; single_word=true is kUnsupported.
Result<std::vector<AddedToken>> parse_added_tokens(const Json& list, const std::string& where);

// A piece of text, or one added token.
struct TextSegment {
  std::string_view text;  // empty for a token
  int32_t token_id = -1;  // >= 0 for a token
  size_t begin = 0;       // byte offset in the split text
};

class AddedTokenSplitter {
 public:
  AddedTokenSplitter() = default;
  // `tokens` with their match text (the content, or its normalized form).
  explicit AddedTokenSplitter(std::vector<AddedToken> tokens);

  // The text cut around every added token it contains; text segments may be empty-free.
  std::vector<TextSegment> split(std::string_view text) const;
  bool empty() const { return tokens_.empty(); }

 private:
  const AddedToken* match_at(std::string_view text, size_t pos) const;

  std::vector<AddedToken> tokens_;                 // longest content first
  std::array<std::vector<int32_t>, 256> by_first_byte_;  // indexes into tokens_
};

}  // namespace plimsoll::hf
