// BERT's text handling before WordPiece, as Hugging Face tokenizers'
// BertNormalizer (clean text, spaces around CJK ideographs, accents stripped,
// lowercase: the uncased models' settings) and BertPreTokenizer (words split
// at whitespace, each punctuation character a word of its own).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace plimsoll {

// `text` is valid UTF-8; so is the result. Drops NUL, U+FFFD and other
// control/format/unassigned characters (tab and newlines become spaces, as
// every whitespace does), puts spaces around CJK ideographs, strips
// non-spacing marks after NFD, then lowercases one character at a time.
std::string bert_normalize(std::string_view text);

// The words of normalized text: whitespace removed, punctuation isolated.
std::vector<std::string> bert_words(std::string_view text);

}  // namespace plimsoll
