// TextTokenizer: the interface callers hold for any tokenizer (llama vocabularies
// from GGUF/llama2.c, Hugging Face tokenizer.json): encode, decode, stream text.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace plimsoll {

class TextTokenizer {
 public:
  virtual ~TextTokenizer() = default;

  // Ids of `text`. add_special: also the tokens the tokenizer puts around text
  // (BOS for llama vocabularies, the post-processor's template for tokenizer.json).
  // Special tokens written in the text (e.g. "<|im_start|>") are recognized
  // where the tokenizer does so (tokenizer.json: always).
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special) const = 0;
  // Text of the ids, special tokens left out. May be invalid UTF-8 when the ids
  // split a character (see StreamDecoder).
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
  // Appends the bytes token `id` adds after `prev_id` (-1: none), such that the
  // pieces of a sequence after its first token concatenate to decode()'s text.
  virtual void append_piece_text(int32_t prev_id, int32_t id, std::string* out) const = 0;

  virtual int64_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when there is none
  virtual int32_t eos_id() const = 0;  // -1 when there is none
  // Ids that stand for no ordinary text (control, unknown, special added tokens).
  virtual bool is_special(int32_t id) const = 0;

 protected:
  TextTokenizer() = default;
  TextTokenizer(const TextTokenizer&) = default;
  TextTokenizer(TextTokenizer&&) = default;
  TextTokenizer& operator=(const TextTokenizer&) = default;
  TextTokenizer& operator=(TextTokenizer&&) = default;
};

}  // namespace plimsoll
