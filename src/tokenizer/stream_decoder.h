// StreamDecoder: turns generated token ids, one at a time, into text that is
// always complete, valid UTF-8 (incomplete sequences held back, bad ones U+FFFD).
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/text_tokenizer.h"
#include "tokenizer/tokenizer.h"  // kept for callers that stream the llama Tokenizer

namespace plimsoll {

// The concatenation of every push() and finish() equals
// utf8_lossy(tokenizer.decode(prev_id followed by the ids)) minus prev_id's text.
class StreamDecoder {
 public:
  // prev_id: the token before the first pushed one (e.g. the prompt's last, or
  // BOS), so the leading-space rule applies; -1 when there is none.
  explicit StreamDecoder(const TextTokenizer& tokenizer, int32_t prev_id = -1)
      : tokenizer_(&tokenizer), prev_id_(prev_id) {}

  // The text that became complete with this token ("" while a multi-byte
  // character is still incomplete).
  std::string push(int32_t id);
  // Flushes what is pending: an incomplete tail becomes U+FFFD.
  std::string finish();
  // Bytes held back, waiting for the rest of a character (at most 3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  std::string drain(bool final);

  const TextTokenizer* tokenizer_;
  int32_t prev_id_;
  std::string pending_;
};

}  // namespace plimsoll
