// WordPieceTokenizer: BERT's tokenizer (GGUF tokenizer.ggml.model "bert"),
// as Hugging Face tokenizers runs bert-base-uncased style tokenizer.json
// files: special tokens found in the raw text, BertNormalizer,
// BertPreTokenizer, then WordPiece (longest known prefix first, "##" pieces
// after it; a word with no split, or longer than 100 characters, is [UNK]).
//
// llama.cpp's converter stores the vocabulary in "phantom space" form: a
// word-initial piece carries U+2581 in front ("▁hello"), a continuation piece
// is written without its "##" ("llo"), and "[CLS]"-style names stay as they are.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "formats/vocab.h"
#include "tokenizer/hf_added_tokens.h"
#include "tokenizer/text_tokenizer.h"

namespace plimsoll {

class WordPieceTokenizer final : public TextTokenizer {
 public:
  // From a "bert" vocabulary: bos_id is [CLS], eos_id is [SEP] (put around a
  // text with add_special), unk_id is [UNK]. `file_name` names it in errors.
  static Result<WordPieceTokenizer> create(const Vocab& vocab, const std::string& file_name);

  std::vector<int32_t> encode(std::string_view text, bool add_special) const override;
  std::vector<int32_t> encode_prompt(std::string_view text, bool add_special, bool) const override {
    return encode(text, add_special);
  }
  bool add_special_by_default() const override { return true; }
  // Pieces joined, a space before each word-initial one (not the first).
  std::string decode_raw(std::span<const int32_t> ids) const override;
  // " hello" for a word-initial piece ("hello" right after a special token), "llo" for "##llo".
  void append_piece_text(int32_t prev_id, int32_t id, std::string* out) const override;
  std::string_view token(int32_t id) const override;
  int64_t max_token_bytes() const override { return 4 * longest_token_bytes_; }
  int64_t vocab_size() const override { return static_cast<int64_t>(pieces_.size()); }
  int32_t bos_id() const override { return bos_id_; }
  int32_t eos_id() const override { return eos_id_; }
  bool is_special(int32_t id) const override;

 private:
  WordPieceTokenizer() = default;
  void encode_word(std::string_view word, std::vector<int32_t>* ids) const;
  std::string_view piece_text(int32_t id) const;  // the piece without U+2581

  std::vector<std::string> pieces_;  // id -> stored piece
  std::vector<bool> special_;        // id -> control token
  std::unordered_map<std::string, int32_t> word_start_;  // "hello" -> id of "▁hello"
  std::unordered_map<std::string, int32_t> continuation_;  // "llo" -> id of "##llo"
  hf::AddedTokenSplitter specials_;  // control tokens, matched in the raw text
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  int32_t unk_id_ = -1;
  bool add_bos_ = true;
  bool add_eos_ = true;
  int64_t longest_token_bytes_ = 1;
};

}  // namespace plimsoll
