// The parts of a loaded tokenizer.json, shared read-only by HfTokenizer copies;
// private to the hf_* files (hf_tokenizer_load.cpp builds it).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/hf_added_tokens.h"
#include "tokenizer/hf_bpe.h"
#include "tokenizer/hf_decoder.h"
#include "tokenizer/hf_normalizer.h"
#include "tokenizer/hf_post_processor.h"
#include "tokenizer/hf_pre_tokenizer.h"
#include "tokenizer/hf_tokenizer.h"

namespace plimsoll::hf {

struct TokenizerData {
  HfBpe model;
  std::unique_ptr<Normalizer> normalizer;      // null: none
  std::unique_ptr<PreTokenizer> pre_tokenizer; // null: the whole text is one word
  std::unique_ptr<Decoder> decoder;            // null: tokens joined with spaces
  AddedTokenSplitter raw_added;                // added tokens matched on the raw text
  AddedTokenSplitter normalized_added;         // matched after normalization
  std::vector<AddedToken> added_tokens;         // as listed in the file
  SpecialWrap wrap;
  std::vector<bool> special;                   // id -> special added token
  std::vector<bool> added;                     // id -> any added token
  HfTokenizerConfig config;
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int64_t longest_token_bytes = 1;             // stored form, vocab and added tokens
};

Result<std::shared_ptr<const TokenizerData>> load_tokenizer_data(const Json& json,
                                                                 const HfTokenizerConfig& config,
                                                                 const std::string& file_name);

}  // namespace plimsoll::hf
