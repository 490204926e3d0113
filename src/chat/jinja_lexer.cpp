// The Jinja lexer. Preprocessing mirrors @huggingface/jinja (one trailing
// newline dropped, lstrip_blocks and trim_blocks on), then a single scan.
#include "chat/jinja_lexer.h"

#include <cctype>

namespace plimsoll::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// HF: template.replace(/^[ \t]*({[#%-])/gm, "$1") and /([#%-]})\n/g -> "$1".
std::string preprocess(std::string_view source) {
  std::string text(source);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const bool line_start = pos == 0 || text[pos - 1] == '\n' || text[pos - 1] == '\r';
    if (line_start) {
      size_t end = pos;
      while (end < text.size() && (text[end] == ' ' || text[end] == '\t')) ++end;
      if (end > pos && end + 1 < text.size() && text[end] == '{' &&
          (text[end + 1] == '#' || text[end + 1] == '%' || text[end + 1] == '-')) {
        pos = end;
      }
    }
    out += text[pos];
    if (text[pos] == '}' && pos > 0 && (text[pos - 1] == '#' || text[pos - 1] == '%' || text[pos - 1] == '-') &&
        pos + 1 < text.size() && text[pos + 1] == '\n') {
      ++pos;  // trim_blocks: the newline after a tag
    }
    ++pos;
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}
  Result<std::vector<Token>> run();

 private:
  Error error(const std::string& problem) const {
    return make_error(ErrorCode::kInvalidArgument, "chat template " + pos_.text() + ": " + problem);
  }
  bool at(std::string_view s) const { return std::string_view(src_).substr(i_).starts_with(s); }
  void advance(size_t n = 1);
  void push(TokenKind kind, std::string text, SourcePos pos) { tokens_.push_back({kind, std::move(text), pos}); }
  void strip_trailing_text();
  void skip_whitespace() {
    while (i_ < src_.size() && is_space(src_[i_])) advance();
  }
  void lex_text();
  Status lex_comment();
  Status lex_tag_body(TokenKind close_kind, std::string_view close);
  Status lex_string();
  void lex_number();
  void lex_name();
  Status lex_operator();

  std::string src_;
  size_t i_ = 0;
  SourcePos pos_;
  std::vector<Token> tokens_;
};

void Lexer::advance(size_t n) {
  for (size_t k = 0; k < n && i_ < src_.size(); ++k, ++i_) {
    if (src_[i_] == '\n') {
      ++pos_.line;
      pos_.column = 1;
    } else {
      ++pos_.column;
    }
  }
}

void Lexer::strip_trailing_text() {
  if (tokens_.empty() || tokens_.back().kind != TokenKind::kText) return;
  std::string& text = tokens_.back().text;
  while (!text.empty() && is_space(text.back())) text.pop_back();
  if (text.empty()) tokens_.pop_back();
}

void Lexer::lex_text() {
  const SourcePos start = pos_;
  std::string text;
  while (i_ < src_.size() && !(at("{{") || at("{%") || at("{#"))) {
    text += src_[i_];
    advance();
  }
  if (!text.empty()) push(TokenKind::kText, std::move(text), start);
}

Status Lexer::lex_comment() {
  advance(2);
  if (at("-")) {
    strip_trailing_text();
    advance();
  }
  bool strip_after = false;
  while (!at("#}")) {
    if (i_ >= src_.size()) return error("a comment is not closed with #}");
    strip_after = src_[i_] == '-';
    advance();
  }
  advance(2);
  if (strip_after) skip_whitespace();
  return Status::ok_status();
}

Result<std::vector<Token>> Lexer::run() {
  while (i_ < src_.size()) {
    if (at("{#")) {
      PLIMSOLL_TRY(lex_comment());
    } else if (at("{{") || at("{%")) {
      const bool expr = at("{{");
      push(expr ? TokenKind::kExprOpen : TokenKind::kStmtOpen, expr ? "{{" : "{%", pos_);
      advance(2);
      if (at("-")) {
        // Move the open token past a stripped text token.
        Token open = tokens_.back();
        tokens_.pop_back();
        strip_trailing_text();
        tokens_.push_back(open);
        advance();
      }
      PLIMSOLL_TRY(expr ? lex_tag_body(TokenKind::kExprClose, "}}")
                        : lex_tag_body(TokenKind::kStmtClose, "%}"));
    } else {
      lex_text();
    }
  }
  push(TokenKind::kEnd, "", pos_);
  return std::move(tokens_);
}

Status Lexer::lex_tag_body(TokenKind close_kind, std::string_view close) {
  int depth = 0;  // brackets opened inside the tag ("}}" may close a dict)
  while (true) {
    skip_whitespace();
    if (i_ >= src_.size()) return error("a tag is not closed with " + std::string(close));
    if (depth == 0 && at("-") && std::string_view(src_).substr(i_ + 1).starts_with(close)) {
      push(close_kind, std::string(close), pos_);
      advance(1 + close.size());
      skip_whitespace();
      return Status::ok_status();
    }
    if (depth == 0 && at(close)) {
      push(close_kind, std::string(close), pos_);
      advance(close.size());
      return Status::ok_status();
    }
    const char c = src_[i_];
    if (c == '\'' || c == '"') {
      PLIMSOLL_TRY(lex_string());
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      lex_number();
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      lex_name();
    } else {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      PLIMSOLL_TRY(lex_operator());
    }
  }
}

Status Lexer::lex_string() {
  const SourcePos start = pos_;
  const char quote = src_[i_];
  advance();
  std::string value;
  while (i_ < src_.size() && src_[i_] != quote) {
    char c = src_[i_];
    if (c == '\\' && i_ + 1 < src_.size()) {
      advance();
      c = src_[i_];
      switch (c) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '0': value += '\0'; break;
        default: value += c; break;  // \\ \' \" and unknown escapes keep the character
      }
      advance();
      continue;
    }
    value += c;
    advance();
  }
  if (i_ >= src_.size()) return error("a string literal is not closed");
  advance();
  push(TokenKind::kString, std::move(value), start);
  return Status::ok_status();
}

void Lexer::lex_number() {
  const SourcePos start = pos_;
  std::string text;
  bool is_float = false;
  while (i_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[i_])) || src_[i_] == '_')) {
    if (src_[i_] != '_') text += src_[i_];
    advance();
  }
  if (at(".") && i_ + 1 < src_.size() && std::isdigit(static_cast<unsigned char>(src_[i_ + 1]))) {
    is_float = true;
    text += '.';
    advance();
    while (i_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[i_]))) {
      text += src_[i_];
      advance();
    }
  }
  push(is_float ? TokenKind::kFloat : TokenKind::kInt, std::move(text), start);
}

void Lexer::lex_name() {
  const SourcePos start = pos_;
  std::string text;
  while (i_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[i_])) || src_[i_] == '_')) {
    text += src_[i_];
    advance();
  }
  push(TokenKind::kName, std::move(text), start);
}

Status Lexer::lex_operator() {
  static constexpr std::string_view kOperators[] = {
      "//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
      "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|"};
  for (const std::string_view op : kOperators) {
    if (at(op)) {
      push(TokenKind::kOperator, std::string(op), pos_);
      advance(op.size());
      return Status::ok_status();
    }
  }
  return error(std::string("unexpected character '") + src_[i_] + "'");
}

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source) {
  Lexer lexer(preprocess(source));
  return lexer.run();
}

}  // namespace plimsoll::jinja
