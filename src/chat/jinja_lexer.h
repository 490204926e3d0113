// Jinja lexer: template text -> tokens (text, tag delimiters, names, literals,
// operators), with HF's lstrip_blocks/trim_blocks and `-` whitespace control.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace plimsoll::jinja {

struct SourcePos {
  int line = 1;
  int column = 1;
  std::string text() const { return std::to_string(line) + ":" + std::to_string(column); }
};

enum class TokenKind {
  kText,         // literal template text
  kExprOpen,     // {{
  kExprClose,    // }}
  kStmtOpen,     // {%
  kStmtClose,    // %}
  kName,         // identifiers and keywords
  kString,       // quoted literal, escapes resolved
  kInt,
  kFloat,
  kOperator,     // punctuation and operators: + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
  kEnd,
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  SourcePos pos;
};

// Errors: kInvalidArgument "chat template <line>:<col>: <problem>".
Result<std::vector<Token>> tokenize(std::string_view source);

}  // namespace plimsoll::jinja
