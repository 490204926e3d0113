// Token offsets for POST /tokenize: each token's byte span in the input,
// recovered by walking the decoded pieces along the text.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/text_tokenizer.h"

namespace plimsoll::api {

struct TokenSpan {
  int32_t id = 0;
  size_t start = 0;  // byte offsets into the input, stop exclusive
  size_t stop = 0;
};

// Control tokens (BOS) get an empty span; the SentencePiece dummy-prefix
// space, absent from the input, is not counted.
std::vector<TokenSpan> token_spans(const TextTokenizer& tokenizer, std::string_view text,
                                   const std::vector<int32_t>& ids);

}  // namespace plimsoll::api
