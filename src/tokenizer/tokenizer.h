// Tokenizer: SentencePiece-style BPE with byte fallback ("llama" vocabularies),
// built from a Vocab; encodes text to ids (llama2.c's rules) and decodes back.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "formats/vocab.h"
#include "tokenizer/text_tokenizer.h"

namespace plimsoll {

// Work done by one encode() call, for complexity tests (no timing needed).
struct EncodeStats {
  int64_t initial_symbols = 0;  // characters / fallback bytes before merging
  int64_t pairs_pushed = 0;     // merge candidates put on the priority queue
  int64_t pairs_popped = 0;     // candidates taken off (valid or stale)
  int64_t merges = 0;           // merges applied
};

class Tokenizer : public TextTokenizer {
 public:
  // Fails with kUnsupported for a model other than "llama" and kInvalidFile
  // for an inconsistent vocabulary (empty, mismatched arrays, bad special ids).
  static Result<Tokenizer> create(Vocab vocab);

  // llama2.c's encoder: BOS (optional), a dummy-prefix space when the text is
  // non-empty and the vocab asks for it, one symbol per UTF-8 character (an
  // invalid byte is a symbol of its own), byte tokens for characters without a
  // piece, then repeated merging of the adjacent pair whose merged piece has the
  // highest score (ties: leftmost). O(n log n) with a priority queue over pairs.
  // parse_special: text equal to a control token's piece (e.g. "<s>") becomes
  // that token; the dummy prefix then applies only to text at the very start.
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special,
                              EncodeStats* stats = nullptr) const;
  // TextTokenizer: add_special = BOS first (even when the vocabulary's add_bos
  // is false) and EOS last when the vocabulary's add_eos is set (GGUF
  // tokenizer.ggml.add_eos_token); no special-token parsing.
  std::vector<int32_t> encode(std::string_view text, bool add_special) const override {
    return encode_prompt(text, add_special, /*parse_special=*/false);
  }
  std::vector<int32_t> encode_prompt(std::string_view text, bool add_special,
                                     bool parse_special) const override {
    std::vector<int32_t> ids = encode(text, add_special, parse_special);
    if (add_special && vocab_.add_eos && vocab_.eos_id >= 0) ids.push_back(vocab_.eos_id);
    return ids;
  }
  bool add_special_by_default() const override { return vocab_.add_bos; }

  // Text of the ids: U+2581 -> space, byte tokens -> their raw byte, control
  // tokens -> nothing, and the leading space of a piece right after BOS dropped.
  // The result may be invalid UTF-8 when the ids are (see StreamDecoder).
  std::string decode_raw(std::span<const int32_t> ids) const override;
  // Text of one token given the token before it (-1: none). "" for bad ids.
  std::string_view piece_text(int32_t prev_id, int32_t id) const;
  void append_piece_text(int32_t prev_id, int32_t id, std::string* out) const override {
    out->append(piece_text(prev_id, id));
  }

  // The most input bytes one token can stand for (at least 1): a text of n
  // bytes encodes to at least n / max_token_bytes() tokens.
  int64_t max_token_bytes() const override { return std::max<int64_t>(1, static_cast<int64_t>(max_text_bytes_)); }
  int64_t vocab_size() const override { return vocab_.size(); }
  int32_t bos_id() const override { return vocab_.bos_id; }
  int32_t eos_id() const override { return vocab_.eos_id; }
  bool add_bos() const { return vocab_.add_bos; }
  // Control, unknown and unused tokens: ids that stand for no ordinary text.
  bool is_special(int32_t id) const override;
  // The stored piece (SentencePiece form, U+2581 for space); "" for bad ids.
  std::string_view piece(int32_t id) const;
  std::string_view token(int32_t id) const override { return piece(id); }
  TokenType type(int32_t id) const;
  // Id of a stored piece (any type; the lowest id when pieces repeat).
  std::optional<int32_t> token_id(std::string_view piece) const;
  // Id of the byte token for `byte`, -1 when the vocabulary has none.
  int32_t byte_token(uint8_t byte) const { return byte_ids_[byte]; }

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using PieceMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;
  struct Special {
    std::string text;
    int32_t id;
  };

  explicit Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}
  void build_tables();
  bool valid_id(int32_t id) const { return id >= 0 && id < vocab_.size(); }
  std::optional<int32_t> text_token(std::string_view text) const;
  void encode_segment(std::string_view text, bool at_start, std::vector<int32_t>* ids,
                      EncodeStats* stats) const;
  void encode_with_specials(std::string_view text, std::vector<int32_t>* ids,
                            EncodeStats* stats) const;
  const Special* match_special(std::string_view text, size_t pos) const;

  Vocab vocab_;
  std::vector<float> merge_scores_;     // scores with NaN replaced by -inf
  std::vector<std::string> texts_;      // id -> decoded text
  PieceMap piece_to_id_;                // stored piece -> id (all types)
  PieceMap text_to_id_;                 // text (space, not U+2581) -> id, mergeable types only
  size_t max_text_bytes_ = 0;           // longest key of text_to_id_
  std::array<int32_t, 256> byte_ids_{};
  std::vector<Special> specials_;       // control pieces, longest first
  std::array<bool, 256> special_first_byte_{};
};

}  // namespace plimsoll
