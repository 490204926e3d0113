// StreamDecoder: turns generated token ids, one at a time, into text that is
// always complete, valid UTF-8 (incomplete sequences held back, bad ones U+FFFD).
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/text_tokenizer.h"
#include "tokenizer/tokenizer.h"  // kept for callers that stream the llama Tokenizer

namespace plimsoll {

// The concatenation of every push() and finish() is the served text of the ids:
// utf8_lossy(tokenizer.decode_raw(prev_id followed by the ids)) minus prev_id's text,
// then clean_up_tokenization of it when the tokenizer cleans up tokenization spaces
// (tokenizer_config.json clean_up_tokenization_spaces) and the decoder is not raw.
class StreamDecoder {
 public:
  // prev_id: the token before the first pushed one (e.g. the prompt's last, or
  // BOS), so the leading-space rule applies; -1 when there is none. raw: never
  // clean up (the text a grammar constrained, token for token).
  explicit StreamDecoder(const TextTokenizer& tokenizer, int32_t prev_id = -1, bool raw = false)
      : tokenizer_(&tokenizer), prev_id_(prev_id), clean_up_(!raw && tokenizer.cleans_up_tokenization_spaces()) {}

  // The text that became complete with this token ("" while a multi-byte
  // character is still incomplete). When cleaning up, text that a following token
  // may still change (a trailing " " before a possible ".", " n" before "'t") is
  // held back too.
  std::string push(int32_t id);
  // Flushes what is pending: an incomplete tail becomes U+FFFD.
  std::string finish();
  // Bytes held back, waiting for the rest of a character (at most 3).
  size_t pending_bytes() const { return pending_.size(); }
  // Whether the text is cleaned up (see above).
  bool cleans_up() const { return clean_up_; }

 private:
  std::string drain(bool final);
  std::string clean(std::string text, bool final);

  const TextTokenizer* tokenizer_;
  int32_t prev_id_;
  bool clean_up_;
  std::string pending_;
  std::string uncleaned_;  // complete text held until clean_up_tokenization of it is final
};

}  // namespace plimsoll
