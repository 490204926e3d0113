// StreamDecoder: turns generated token ids, one at a time, into text that is
// always complete, valid UTF-8 (incomplete sequences held back, bad ones U+FFFD).
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/text_tokenizer.h"
#include "tokenizer/tokenizer.h"  // kept for callers that stream the llama Tokenizer

namespace plimsoll {

// transformers' clean_up_tokenization: " ." -> ".", " ?" -> "?", " !" -> "!", " ," -> ",",
// " ' " -> "'", " n't" -> "n't", " 'm" -> "'m", " 's" -> "'s", " 've" -> "'ve",
// " 're" -> "'re", each replace over the whole text in that order, as Python's str.replace.
std::string clean_up_tokenization(std::string text);
// The longest prefix of `text` whose cleaned form no later text can change:
// clean_up_tokenization(text + more) == clean_up_tokenization(text[:n]) +
// clean_up_tokenization(text[n:] + more). The whole text when its last 4 bytes hold no
// space, else up to a space not preceded by '\'' (a match only spans a space in first
// place, but for " ' ").
size_t clean_up_stable_prefix(std::string_view text);

// The concatenation of every push() and finish() equals
// utf8_lossy(tokenizer.decode(prev_id followed by the ids)) minus prev_id's text.
class StreamDecoder {
 public:
  // prev_id: the token before the first pushed one (e.g. the prompt's last, or
  // BOS), so the leading-space rule applies; -1 when there is none.
  explicit StreamDecoder(const TextTokenizer& tokenizer, int32_t prev_id = -1)
      : tokenizer_(&tokenizer), prev_id_(prev_id) {}

  // The text that became complete with this token ("" while a multi-byte
  // character is still incomplete). With a tokenizer that cleans up tokenization
  // spaces, text that a following token may still change (a trailing " " before a
  // possible ".", " n" before "'t") is held back too.
  std::string push(int32_t id);
  // Flushes what is pending: an incomplete tail becomes U+FFFD.
  std::string finish();
  // Bytes held back, waiting for the rest of a character (at most 3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  std::string drain(bool final);
  std::string clean(std::string text, bool final);

  const TextTokenizer* tokenizer_;
  int32_t prev_id_;
  std::string pending_;
  std::string uncleaned_;  // complete text held until clean_up_tokenization of it is final
};

}  // namespace plimsoll
