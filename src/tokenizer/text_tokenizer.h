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
  // As encode(), and parse_special asks for special tokens written in the text to
  // be recognized where that is optional (llama vocabularies: control pieces such
  // as "<s>"; tokenizer.json recognizes them always).
  virtual std::vector<int32_t> encode_prompt(std::string_view text, bool add_special,
                                             bool parse_special) const = 0;
  // Whether a plain prompt gets the special tokens (llama vocabularies: their
  // add_bos flag; tokenizer.json: true, its post-processor says which).
  virtual bool add_special_by_default() const = 0;
  // The tokenizer library's text of the ids, special tokens left out: Hugging Face
  // tokenizers' Tokenizer.decode(ids, skip_special_tokens=True), which never cleans up
  // (what tests/data/hf_tokenizer/*.ref.jsonl pin). May be invalid UTF-8 when the ids
  // split a character (see StreamDecoder).
  virtual std::string decode_raw(std::span<const int32_t> ids) const = 0;
  // The text served to users: transformers' tokenizer.decode(ids,
  // skip_special_tokens=True), i.e. decode_raw() then clean_up_tokenization when
  // cleans_up_tokenization_spaces().
  std::string decode(std::span<const int32_t> ids) const;
  // Appends the bytes token `id` adds after `prev_id` (-1: none), such that the
  // pieces of a sequence after its first token concatenate to decode_raw()'s text.
  virtual void append_piece_text(int32_t prev_id, int32_t id, std::string* out) const = 0;
  // The same as a string.
  std::string piece_string(int32_t prev_id, int32_t id) const {
    std::string out;
    append_piece_text(prev_id, id, &out);
    return out;
  }
  // The token as stored (SentencePiece piece, tokenizer.json vocab key or added
  // token content, e.g. "<s>"); "" for bad ids.
  virtual std::string_view token(int32_t id) const = 0;
  // The most input bytes one token can stand for (at least 1): a text of n
  // bytes encodes to at least n / max_token_bytes() tokens, special tokens aside.
  virtual int64_t max_token_bytes() const = 0;

  virtual int64_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when there is none
  virtual int32_t eos_id() const = 0;  // -1 when there is none
  // Ids that stand for no ordinary text (control, unknown, special added tokens).
  virtual bool is_special(int32_t id) const = 0;
  // Whether decode() applies transformers' clean_up_tokenization (" ." -> ".", " n't" ->
  // "n't", ...; tokenizer_config.json clean_up_tokenization_spaces), which StreamDecoder
  // then applies to the streamed text too. False for vocabularies read from GGUF or
  // llama2.c files, which carry no such flag.
  virtual bool cleans_up_tokenization_spaces() const { return false; }

 protected:
  TextTokenizer() = default;
  TextTokenizer(const TextTokenizer&) = default;
  TextTokenizer(TextTokenizer&&) = default;
  TextTokenizer& operator=(const TextTokenizer&) = default;
  TextTokenizer& operator=(TextTokenizer&&) = default;
};

}  // namespace plimsoll
