// Vocab: a tokenizer's vocabulary as stored in a model file (pieces, merge
// scores, token types, special ids). Plain data; tokenizer/ turns it into a
// working tokenizer. Pieces are stored SentencePiece-style: a space is U+2581.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plimsoll {

// Token types as GGUF numbers them (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct Vocab {
  std::string model = "llama";       // tokenizer.ggml.model: "llama" = SentencePiece BPE,
                                     // "gpt2" = byte-level BPE (tokenizer.json's kind),
                                     // "bert" = WordPiece (bos_id [CLS], eos_id [SEP])
  std::vector<std::string> pieces;   // id -> piece bytes
  std::vector<float> scores;         // id -> merge score (higher merges first)
  std::vector<TokenType> types;      // id -> type
  int32_t bos_id = 1;
  int32_t eos_id = 2;
  int32_t unk_id = 0;
  int32_t pad_id = -1;
  bool add_bos = true;
  bool add_bos_in_file = false;      // tokenizer.ggml.add_bos_token was there (else add_bos
                                     // is the default; a "gpt2" vocabulary's depends on pre)
  bool add_eos = false;
  bool add_space_prefix = true;      // SentencePiece "dummy prefix"
  // "gpt2" only: tokenizer.ggml.merges ("left right", highest priority first)
  // and tokenizer.ggml.pre (the pre-tokenizer's name, "default" when absent).
  std::vector<std::string> merges;
  std::string pre;

  int64_t size() const { return static_cast<int64_t>(pieces.size()); }
};

}  // namespace plimsoll
