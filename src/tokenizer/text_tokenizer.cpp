// TextTokenizer::decode: the raw decode, cleaned up as tokenizer_config.json asks.
#include "tokenizer/text_tokenizer.h"

#include "tokenizer/clean_up.h"

namespace plimsoll {

std::string TextTokenizer::decode(std::span<const int32_t> ids) const {
  std::string text = decode_raw(ids);
  return cleans_up_tokenization_spaces() ? clean_up_tokenization(std::move(text)) : text;
}

}  // namespace plimsoll
