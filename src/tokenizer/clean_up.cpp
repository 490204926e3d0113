// transformers' clean_up_tokenization, and where streamed text may be cut before it.
#include "tokenizer/clean_up.h"

namespace plimsoll {

std::string clean_up_tokenization(std::string text) {
  static constexpr std::string_view kRules[][2] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    std::string out;
    size_t pos = 0;
    for (size_t at; (at = text.find(from, pos)) != std::string::npos; pos = at + from.size()) {
      out.append(text, pos, at - pos);
      out.append(to);
    }
    if (pos == 0) continue;
    out.append(text, pos, std::string::npos);
    text = std::move(out);
  }
  return text;
}

// Every rule's match starts with a space and is at most 4 bytes, and a replacement keeps the
// match's last byte, so a cut at c is safe (no match, nor one an earlier rule's replacement
// makes, can span it) when the 3 bytes before c hold no space, or when c is at a space whose
// byte before is none of ' ' (" " + "' m" becomes " 'm" once " ' " is replaced), '\'' (" ' ")
// and 'n' (" n" + " ' t" becomes " n't").
size_t clean_up_stable_prefix(std::string_view text) {
  for (size_t c = text.size(); c > 0; --c) {
    const size_t from = c >= 3 ? c - 3 : 0;
    if (text.substr(from, c - from).find(' ') == std::string_view::npos) return c;
    if (c < text.size() && text[c] == ' ' && text[c - 1] != ' ' && text[c - 1] != '\'' && text[c - 1] != 'n') {
      return c;
    }
  }
  return 0;
}

}  // namespace plimsoll
