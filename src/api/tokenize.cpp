// Aligns token pieces with the input text to report TGI's start / stop
// offsets (byte positions) for POST /tokenize.
#include "api/tokenize.h"

#include <algorithm>

namespace plimsoll::api {

std::vector<TokenSpan> token_spans(const TextTokenizer& tokenizer, std::string_view text,
                                   const std::vector<int32_t>& ids) {
  std::vector<TokenSpan> spans;
  size_t pos = 0;
  for (int32_t id : ids) {
    const std::string text_of_id = tokenizer.is_special(id) ? std::string() : tokenizer.piece_string(-1, id);
    std::string_view piece = text_of_id;
    // A leading space the input does not have is the dummy prefix.
    if (!piece.empty() && piece.front() == ' ' && (pos >= text.size() || text[pos] != ' ')) {
      piece.remove_prefix(1);
    }
    size_t start = std::min(pos, text.size());
    size_t stop = std::min(start + piece.size(), text.size());
    spans.push_back({id, start, stop});
    pos = stop;
  }
  return spans;
}

}  // namespace plimsoll::api
