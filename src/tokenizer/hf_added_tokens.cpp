// Added-token parsing and splitting: a per-first-byte candidate list, longest
// first, tried at each position left to right (HF's leftmost-longest match).
#include "tokenizer/hf_added_tokens.h"

#include <algorithm>

namespace plimsoll::hf {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

Result<AddedToken> parse_one(const Json& json, const std::string& where) {
  AddedToken token;
  const Json* id = find_member(json, "id");
  if (id == nullptr || !id->is_number_integer() || id->get<int64_t>() < 0 ||
      id->get<int64_t>() >= kMaxTokenIds) {
    return invalid_field(where, "id", "is not a valid id");
  }
  token.id = id->get<int32_t>();
  PLIMSOLL_ASSIGN(token.content, get_string(json, "content", where));
  if (token.content.empty()) return invalid_field(where, "content", "is empty");
  PLIMSOLL_ASSIGN(token.special, get_bool_or(json, "special", false, where));
  PLIMSOLL_ASSIGN(token.lstrip, get_bool_or(json, "lstrip", false, where));
  PLIMSOLL_ASSIGN(token.rstrip, get_bool_or(json, "rstrip", false, where));
  PLIMSOLL_ASSIGN(token.normalized, get_bool_or(json, "normalized", !token.special, where));
  PLIMSOLL_ASSIGN(const bool single_word, get_bool_or(json, "single_word", false, where));
  if (single_word) return unsupported_value(where, "single_word", "true");
  return token;
}

}  // namespace

Result<std::vector<AddedToken>> parse_added_tokens(const Json& list, const std::string& where) {
  if (!list.is_array()) return make_error(ErrorCode::kInvalidFile, where + " is not a list");
  std::vector<AddedToken> tokens;
  for (size_t i = 0; i < list.size(); ++i) {
    PLIMSOLL_ASSIGN(AddedToken token, parse_one(list[i], where + "[" + std::to_string(i) + "]"));
    tokens.push_back(std::move(token));
  }
  return tokens;
}

AddedTokenSplitter::AddedTokenSplitter(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  std::stable_sort(tokens_.begin(), tokens_.end(), [](const AddedToken& a, const AddedToken& b) {
    return a.content.size() > b.content.size();
  });
  for (size_t i = 0; i < tokens_.size(); ++i) {
    by_first_byte_[static_cast<uint8_t>(tokens_[i].content[0])].push_back(static_cast<int32_t>(i));
  }
}

const AddedToken* AddedTokenSplitter::match_at(std::string_view text, size_t pos) const {
  for (const int32_t index : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
    const AddedToken& token = tokens_[static_cast<size_t>(index)];
    if (text.substr(pos).starts_with(token.content)) return &token;
  }
  return nullptr;
}

std::vector<TextSegment> AddedTokenSplitter::split(std::string_view text) const {
  std::vector<TextSegment> segments;
  size_t text_begin = 0;  // start of the pending text segment
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* token = match_at(text, pos);
    if (token == nullptr) {
      ++pos;
      continue;
    }
    size_t text_end = pos;
    if (token->lstrip) {
      while (text_end > text_begin && is_space(text[text_end - 1])) --text_end;
    }
    if (text_end > text_begin) {
      segments.push_back({text.substr(text_begin, text_end - text_begin), -1, text_begin});
    }
    segments.push_back({{}, token->id, text_end});
    pos += token->content.size();
    if (token->rstrip) {
      while (pos < text.size() && is_space(text[pos])) ++pos;
    }
    text_begin = pos;
  }
  if (text_begin < text.size()) {
    segments.push_back({text.substr(text_begin), -1, text_begin});
  }
  return segments;
}

}  // namespace plimsoll::hf
