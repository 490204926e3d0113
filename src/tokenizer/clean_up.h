// transformers' clean_up_tokenization (tokenizer_config.json clean_up_tokenization_spaces),
// which TextTokenizer::decode() and StreamDecoder apply to served text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace plimsoll {

// transformers' clean_up_tokenization: " ." -> ".", " ?" -> "?", " !" -> "!", " ," -> ",",
// " ' " -> "'", " n't" -> "n't", " 'm" -> "'m", " 's" -> "'s", " 've" -> "'ve",
// " 're" -> "'re", each replace over the whole text in that order, as Python's str.replace.
std::string clean_up_tokenization(std::string text);
// A prefix of `text` whose cleaned form no later text can change:
// clean_up_tokenization(text + more) == clean_up_tokenization(text[:n]) +
// clean_up_tokenization(text[n:] + more) for every `more`. All of `text` when its last 3
// bytes hold no space; else it ends before the last space or run of non-spaces a later
// byte can no longer join (a trailing " n", " '" or run of spaces waits for what follows).
size_t clean_up_stable_prefix(std::string_view text);

}  // namespace plimsoll
