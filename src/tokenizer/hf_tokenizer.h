// HfTokenizer: a Hugging Face tokenizer.json tokenizer (BPE model with its
// normalizer, pre-tokenizer, added tokens, post-processor and decoder).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "formats/vocab.h"
#include "tokenizer/text_tokenizer.h"

namespace plimsoll {

namespace hf {
struct TokenizerData;
}

// What tokenizer_config.json adds: special token names and the chat template.
struct HfTokenizerConfig {
  std::string bos_token;      // "" when not given
  std::string eos_token;
  std::string chat_template;  // "" when not given (a named-template list: the "default" one)
  // add_bos_token / add_eos_token: when given, whether encode(text, true) puts
  // BOS before / EOS after the text, whatever the post-processor says
  // (transformers' Llama and Gemma tokenizers rebuild their post-processor so).
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  // clean_up_tokenization_spaces: decode() (not decode_raw()) and StreamDecoder apply
  // clean_up_tokenization. Absent: false, transformers' default since 4.45.
  bool clean_up_tokenization_spaces = false;
};

class HfTokenizer final : public TextTokenizer {
 public:
  // <dir>/tokenizer.json and, when present, <dir>/tokenizer_config.json.
  static Result<HfTokenizer> load_dir(const std::string& dir);
  // tokenizer.json at `path`; `config_path` may be "" (no tokenizer_config.json).
  static Result<HfTokenizer> load_file(const std::string& path, const std::string& config_path = "");
  // From the files' text; `file_name` names tokenizer.json in errors.
  static Result<HfTokenizer> from_json(std::string_view tokenizer_json,
                                       const HfTokenizerConfig& config = {},
                                       const std::string& file_name = "tokenizer.json");

  // A GGUF byte-level vocabulary (Vocab::model "gpt2": tokens, merges, token
  // types, bos/eos ids, add_bos/add_eos, pre = tokenizer.ggml.pre, one of
  // "default"/"gpt2", "llama-bpe"/"llama3", "qwen2") as the tokenizer.json it
  // stands for. Control tokens become special added tokens, user-defined ones
  // plain added tokens. `file_name` names the model file in errors.
  static Result<HfTokenizer> from_gguf_vocab(const Vocab& vocab, const std::string& file_name);

  // Encoding as HF tokenizers' encode(text, add_special_tokens): added tokens
  // are split out first, then normalizer, pre-tokenizer and BPE; add_special
  // wraps the ids as the post-processor says. Invalid UTF-8 is read as U+FFFD.
  std::vector<int32_t> encode(std::string_view text, bool add_special) const override;
  // Special tokens in the text are always recognized (parse_special is moot).
  std::vector<int32_t> encode_prompt(std::string_view text, bool add_special,
                                     bool /*parse_special*/) const override {
    return encode(text, add_special);
  }
  bool add_special_by_default() const override { return true; }
  // HF tokenizers' decode(ids, skip_special_tokens=true) (no clean-up), except that
  // bytes stay raw.
  std::string decode_raw(std::span<const int32_t> ids) const override;
  // After prev_id < 0 or a special token the text starts anew: the decoder's
  // first-token rules (e.g. Llama-2's Strip of one leading space) apply, as in
  // HF's streamers, which decode the generated ids alone.
  void append_piece_text(int32_t prev_id, int32_t id, std::string* out) const override;

  int64_t vocab_size() const override;
  int32_t bos_id() const override;
  int32_t eos_id() const override;
  bool is_special(int32_t id) const override;
  bool cleans_up_tokenization_spaces() const override { return config().clean_up_tokenization_spaces; }
  // The longest token, in bytes of its stored form, times 4 (a normalizer may
  // shrink text, e.g. NFC), at least 1. Whitespace an added token's lstrip /
  // rstrip takes is not bounded by it.
  int64_t max_token_bytes() const override;

  // The token string as stored (vocab key or added-token content); "" for bad ids.
  std::string_view token(int32_t id) const override;
  std::optional<int32_t> token_id(std::string_view token) const;
  // Whether encode(text, true) puts ids before the text (e.g. BOS).
  bool adds_prefix() const;
  const HfTokenizerConfig& config() const;

 private:
  explicit HfTokenizer(std::shared_ptr<const hf::TokenizerData> data) : data_(std::move(data)) {}
  std::string decode_tokens(std::span<const int32_t> ids) const;

  std::shared_ptr<const hf::TokenizerData> data_;
};

// tokenizer_config.json's fields (bos_token/eos_token as strings or
// {"content": ...}; chat_template as a string or a list of {name, template}).
Result<HfTokenizerConfig> parse_hf_tokenizer_config(std::string_view json_text,
                                                    const std::string& file_name);

}  // namespace plimsoll
