// Recursive-descent Jinja parser with @huggingface/jinja's precedence:
// ternary < or < and < not < comparison < + - ~ < * / // % < unary < is < | < call/member.
#include "chat/jinja_parser.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>

namespace plimsoll::jinja {
namespace {

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : tokens_(tokens) {}

  // Statements until one of `stops` opens a tag ({% stop ... %}); *stop gets it.
  Result<Body> parse_body(std::initializer_list<const char*> stops, std::string* stop);

 private:
  const Token& peek(size_t ahead = 0) const {
    return tokens_[std::min(i_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() { return tokens_[i_ < tokens_.size() - 1 ? i_++ : i_]; }
  bool is_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kOperator && peek(ahead).text == op;
  }
  bool is_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kName && peek(ahead).text == name;
  }
  Error error_at(const Token& token, const std::string& problem, ErrorCode code = ErrorCode::kInvalidArgument) const {
    return make_error(code, "chat template " + token.pos.text() + ": " + problem);
  }
  Status expect_op(const char* op);
  Status expect_kind(TokenKind kind, const char* what);
  Result<std::string> expect_name();

  Result<StmtPtr> parse_statement();
  Result<StmtPtr> parse_tag();
  Result<StmtPtr> parse_if(const Token& start);
  Result<StmtPtr> parse_for(const Token& start);
  Result<StmtPtr> parse_set(const Token& start);
  Result<StmtPtr> parse_macro(const Token& start);

  Result<ExprPtr> parse_expression();
  Result<ExprPtr> parse_or();
  Result<ExprPtr> parse_and();
  Result<ExprPtr> parse_not();
  Result<ExprPtr> parse_comparison();
  Result<ExprPtr> parse_additive();
  Result<ExprPtr> parse_multiplicative();
  Result<ExprPtr> parse_unary();
  Result<ExprPtr> parse_test();
  Result<ExprPtr> parse_filter();
  Result<ExprPtr> parse_postfix();
  Result<ExprPtr> parse_primary();
  Result<ExprPtr> parse_subscript(ExprPtr object, const Token& open);
  Status parse_args(ArgExprs* args);
  // Sets e's depth from its children's; deeper than kMaxNesting is an error
  // (left-deep chains like a.b.c... or 1+1+1... nest without a guard).
  Result<ExprPtr> finish(ExprPtr e) const;

  // Nesting of expressions and blocks, bounded so hostile templates cannot
  // exhaust the stack here or in the evaluator.
  struct DepthGuard {
    explicit DepthGuard(int* depth) : depth_(depth) { ++*depth_; }
    ~DepthGuard() { --*depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    int* depth_;
  };
  static constexpr int kMaxNesting = 200;
  Status check_depth() const {
    if (depth_ <= kMaxNesting) return Status::ok_status();
    return error_at(peek(), "nesting deeper than " + std::to_string(kMaxNesting), ErrorCode::kUnsupported);
  }

  const std::vector<Token>& tokens_;
  size_t i_ = 0;
  int depth_ = 0;
};

ExprPtr make_expr(ExprKind kind, const Token& at) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->pos = at.pos;
  return e;
}

ExprPtr binary(const Token& op, ExprPtr left, ExprPtr right) {
  ExprPtr e = make_expr(ExprKind::kBinary, op);
  e->name = op.text;
  e->operand = std::move(left);
  e->rhs = std::move(right);
  return e;
}

Result<ExprPtr> Parser::finish(ExprPtr e) const {
  int deepest = 0;
  const auto see = [&](const ExprPtr& child) {
    if (child) deepest = std::max(deepest, child->depth);
  };
  see(e->operand), see(e->rhs), see(e->index), see(e->condition), see(e->otherwise);
  for (const ExprPtr& part : e->slice) see(part);
  for (const ExprPtr& item : e->items) see(item);
  for (const auto& [key, value] : e->entries) see(key), see(value);
  for (const ExprPtr& arg : e->args.positional) see(arg);
  for (const auto& [name, arg] : e->args.keyword) see(arg);
  e->depth = deepest + 1;
  if (e->depth > kMaxNesting) {
    return make_error(ErrorCode::kUnsupported,
                      "chat template " + e->pos.text() + ": nesting deeper than " + std::to_string(kMaxNesting));
  }
  return e;
}

Status Parser::expect_op(const char* op) {
  if (!is_op(op)) return error_at(peek(), std::string("expected '") + op + "', found '" + peek().text + "'");
  next();
  return Status::ok_status();
}

Status Parser::expect_kind(TokenKind kind, const char* what) {
  if (peek().kind != kind) return error_at(peek(), std::string("expected ") + what + ", found '" + peek().text + "'");
  next();
  return Status::ok_status();
}

Result<std::string> Parser::expect_name() {
  if (peek().kind != TokenKind::kName) return error_at(peek(), "expected a name, found '" + peek().text + "'");
  return next().text;
}

Result<Body> Parser::parse_body(std::initializer_list<const char*> stops, std::string* stop) {
  Body body;
  while (peek().kind != TokenKind::kEnd) {
    if (peek().kind == TokenKind::kStmtOpen && peek(1).kind == TokenKind::kName) {
      for (const char* word : stops) {
        if (peek(1).text == word) {
          next();
          *stop = next().text;
          return body;
        }
      }
    }
    PLIMSOLL_ASSIGN(StmtPtr statement, parse_statement());
    body.push_back(std::move(statement));
  }
  if (stops.size() > 0) {
    return error_at(peek(), std::string("the template ends before {% ") + *(stops.end() - 1) + " %}");
  }
  return body;
}

Result<StmtPtr> Parser::parse_statement() {
  const DepthGuard guard(&depth_);
  PLIMSOLL_TRY(check_depth());
  const Token& token = peek();
  if (token.kind == TokenKind::kText) {
    auto s = std::make_unique<Stmt>();
    s->pos = token.pos;
    s->text = next().text;
    return s;
  }
  if (token.kind == TokenKind::kExprOpen) {
    next();
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kOutput;
    s->pos = token.pos;
    PLIMSOLL_ASSIGN(s->expr, parse_expression());
    PLIMSOLL_TRY(expect_kind(TokenKind::kExprClose, "'}}'"));
    return s;
  }
  if (token.kind == TokenKind::kStmtOpen) {
    next();
    return parse_tag();
  }
  return error_at(token, "unexpected '" + token.text + "'");
}

Result<StmtPtr> Parser::parse_tag() {
  const Token& start = peek();
  if (start.kind != TokenKind::kName) return error_at(start, "expected a tag name after {%");
  const std::string word = next().text;
  if (word == "if") return parse_if(start);
  if (word == "for") return parse_for(start);
  if (word == "set") return parse_set(start);
  if (word == "macro") return parse_macro(start);
  if (word.starts_with("end") || word == "elif" || word == "else") {
    return error_at(start, "unexpected {% " + word + " %}");
  }
  if (word == "break" || word == "continue") {
    PLIMSOLL_TRY(expect_kind(TokenKind::kStmtClose, "'%}'"));
    auto s = std::make_unique<Stmt>();
    s->kind = word == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    s->pos = start.pos;
    return s;
  }
  return error_at(start, "tag '" + word + "' is not supported", ErrorCode::kUnsupported);
}

Result<StmtPtr> Parser::parse_if(const Token& start) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kIf;
  s->pos = start.pos;
  PLIMSOLL_ASSIGN(s->expr, parse_expression());
  PLIMSOLL_TRY(expect_kind(TokenKind::kStmtClose, "'%}'"));
  std::string stop;
  PLIMSOLL_ASSIGN(s->body, parse_body({"elif", "else", "endif"}, &stop));
  if (stop == "elif") {
    const DepthGuard guard(&depth_);  // each elif nests one more if
    PLIMSOLL_TRY(check_depth());
    PLIMSOLL_ASSIGN(StmtPtr nested, parse_if(start));  // consumes through endif
    s->else_body.push_back(std::move(nested));
    return s;
  }
  if (stop == "else") {
    PLIMSOLL_TRY(expect_kind(TokenKind::kStmtClose, "'%}'"));
    PLIMSOLL_ASSIGN(s->else_body, parse_body({"endif"}, &stop));
  }
  PLIMSOLL_TRY(expect_kind(TokenKind::kStmtClose, "'%}'"));
  return s;
}

Result<StmtPtr> Parser::parse_for(const Token& start) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kFor;
  s->pos = start.pos;
  const bool parenthesized = is_op("(");
  if (parenthesized) next();
  do {
    PLIMSOLL_ASSIGN(std::string target, expect_name());
    s->targets.push_back(std::move(target));
  } while (is_op(",") && next().kind == TokenKind::kOperator);
  if (parenthesized) PLIMSOLL_TRY(expect_op(")"));
  if (!is_name("in")) return error_at(peek(), "expected 'in' in a for loop");
  next();
  PLIMSOLL_ASSIGN(s->expr, parse_or());
  if (is_name("if")) {
    next();
    PLIMSOLL_ASSIGN(s->filter, parse_or());
  }
  if (is_name("recursive")) return error_at(peek(), "recursive loops are not supported", ErrorCode::kUnsupported);
  PLIMSOLL_TRY(expect_kind(TokenKind::kStmtClose, "'%}'"));
  std::string stop;
  PLIMSOLL_ASSIGN(s->body, parse_body({"else", "endfor"}, &stop));
  if (stop == "else") {
    PLIMSOLL_TRY(expect_kind(TokenKind::kStmtClose, "'%}'"));
    PLIMSOLL_ASSIGN(s->else_body, parse_body({"endfor"}, &stop));
  }
  PLIMSOLL_TRY(expect_kind(TokenKind::kStmtClose, "'%}'"));
  return s;
}

Result<StmtPtr> Parser::parse_set(const Token& start) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kSet;
  s->pos = start.pos;
  PLIMSOLL_ASSIGN(std::string target, expect_name());
  s->targets.push_back(std::move(target));
  if (is_op(".")) {
    next();
    PLIMSOLL_ASSIGN(s->attr, expect_name());
  } else if (is_op(",")) {
    return error_at(peek(), "tuple assignment in set is not supported", ErrorCode::kUnsupported);
  }
  if (is_op("=")) {
    next();
    PLIMSOLL_ASSIGN(s->expr, parse_expression());
    PLIMSOLL_TRY(expect_kind(TokenKind::kStmtClose, "'%}'"));
    return s;
  }
  PLIMSOLL_TRY(expect_kind(TokenKind::kStmtClose, "'=' or '%}'"));
  std::string stop;
  PLIMSOLL_ASSIGN(s->body, parse_body({"endset"}, &stop));  // {% set x %}...{% endset %}
  PLIMSOLL_TRY(expect_kind(TokenKind::kStmtClose, "'%}'"));
  return s;
}

Result<StmtPtr> Parser::parse_macro(const Token& start) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kMacro;
  s->pos = start.pos;
  PLIMSOLL_ASSIGN(std::string name, expect_name());
  s->targets.push_back(std::move(name));
  PLIMSOLL_TRY(expect_op("("));
  while (!is_op(")")) {
    PLIMSOLL_ASSIGN(std::string param, expect_name());
    ExprPtr fallback;
    if (is_op("=")) {
      next();
      PLIMSOLL_ASSIGN(fallback, parse_expression());
    }
    s->params.emplace_back(std::move(param), std::move(fallback));
    if (!is_op(",")) break;
    next();
  }
  PLIMSOLL_TRY(expect_op(")"));
  PLIMSOLL_TRY(expect_kind(TokenKind::kStmtClose, "'%}'"));
  std::string stop;
  PLIMSOLL_ASSIGN(s->body, parse_body({"endmacro"}, &stop));
  PLIMSOLL_TRY(expect_kind(TokenKind::kStmtClose, "'%}'"));
  return s;
}

Result<ExprPtr> Parser::parse_expression() {
  const DepthGuard guard(&depth_);
  PLIMSOLL_TRY(check_depth());
  PLIMSOLL_ASSIGN(ExprPtr value, parse_or());
  if (!is_name("if")) return value;
  const Token& token = next();
  ExprPtr e = make_expr(ExprKind::kTernary, token);
  e->operand = std::move(value);
  PLIMSOLL_ASSIGN(e->condition, parse_or());
  if (is_name("else")) {
    next();
    PLIMSOLL_ASSIGN(e->otherwise, parse_expression());
  }
  return finish(std::move(e));
}

Result<ExprPtr> Parser::parse_or() {
  PLIMSOLL_ASSIGN(ExprPtr left, parse_and());
  while (is_name("or")) {
    const Token& op = next();
    PLIMSOLL_ASSIGN(ExprPtr right, parse_and());
    PLIMSOLL_ASSIGN(left, finish(binary(op, std::move(left), std::move(right))));
  }
  return left;
}

Result<ExprPtr> Parser::parse_and() {
  PLIMSOLL_ASSIGN(ExprPtr left, parse_not());
  while (is_name("and")) {
    const Token& op = next();
    PLIMSOLL_ASSIGN(ExprPtr right, parse_not());
    PLIMSOLL_ASSIGN(left, finish(binary(op, std::move(left), std::move(right))));
  }
  return left;
}

Result<ExprPtr> Parser::parse_not() {
  if (!is_name("not")) return parse_comparison();
  const DepthGuard guard(&depth_);
  PLIMSOLL_TRY(check_depth());
  const Token& token = next();
  ExprPtr e = make_expr(ExprKind::kUnary, token);
  e->name = "not";
  PLIMSOLL_ASSIGN(e->operand, parse_not());
  return finish(std::move(e));
}

Result<ExprPtr> Parser::parse_comparison() {
  PLIMSOLL_ASSIGN(ExprPtr left, parse_additive());
  while (true) {
    const Token& token = peek();
    std::string op;
    if (token.kind == TokenKind::kOperator &&
        (token.text == "==" || token.text == "!=" || token.text == "<" || token.text == ">" ||
         token.text == "<=" || token.text == ">=")) {
      op = token.text;
      next();
    } else if (is_name("in")) {
      op = "in";
      next();
    } else if (is_name("not") && is_name("in", 1)) {
      op = "not in";
      next();
      next();
    } else {
      return left;
    }
    PLIMSOLL_ASSIGN(ExprPtr right, parse_additive());
    Token op_token = token;
    op_token.text = op;
    PLIMSOLL_ASSIGN(left, finish(binary(op_token, std::move(left), std::move(right))));
  }
}

Result<ExprPtr> Parser::parse_additive() {
  PLIMSOLL_ASSIGN(ExprPtr left, parse_multiplicative());
  while (is_op("+") || is_op("-") || is_op("~")) {
    const Token& op = next();
    PLIMSOLL_ASSIGN(ExprPtr right, parse_multiplicative());
    PLIMSOLL_ASSIGN(left, finish(binary(op, std::move(left), std::move(right))));
  }
  return left;
}

Result<ExprPtr> Parser::parse_multiplicative() {
  PLIMSOLL_ASSIGN(ExprPtr left, parse_unary());
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%") || is_op("**")) {
    const Token& op = next();
    PLIMSOLL_ASSIGN(ExprPtr right, parse_unary());
    PLIMSOLL_ASSIGN(left, finish(binary(op, std::move(left), std::move(right))));
  }
  return left;
}

Result<ExprPtr> Parser::parse_unary() {
  if (!is_op("-") && !is_op("+")) return parse_test();
  const DepthGuard guard(&depth_);
  PLIMSOLL_TRY(check_depth());
  const Token& token = next();
  ExprPtr e = make_expr(ExprKind::kUnary, token);
  e->name = token.text;
  PLIMSOLL_ASSIGN(e->operand, parse_unary());
  return finish(std::move(e));
}

Result<ExprPtr> Parser::parse_test() {
  PLIMSOLL_ASSIGN(ExprPtr operand, parse_filter());
  while (is_name("is")) {
    const Token& token = next();
    ExprPtr e = make_expr(ExprKind::kTest, token);
    if (is_name("not")) {
      next();
      e->negated = true;
    }
    // "none", "true", "false" are test names here, not literals.
    PLIMSOLL_ASSIGN(e->name, expect_name());
    if (is_op("(")) {
      next();
      PLIMSOLL_TRY(parse_args(&e->args));
    } else if (peek().kind == TokenKind::kString || peek().kind == TokenKind::kInt ||
               peek().kind == TokenKind::kFloat) {
      PLIMSOLL_ASSIGN(ExprPtr arg, parse_primary());  // "is equalto 'x'"
      e->args.positional.push_back(std::move(arg));
    }
    e->operand = std::move(operand);
    PLIMSOLL_ASSIGN(operand, finish(std::move(e)));
  }
  return operand;
}

Result<ExprPtr> Parser::parse_filter() {
  PLIMSOLL_ASSIGN(ExprPtr operand, parse_postfix());
  while (is_op("|")) {
    const Token& token = next();
    ExprPtr e = make_expr(ExprKind::kFilter, token);
    PLIMSOLL_ASSIGN(e->name, expect_name());
    if (is_op("(")) {
      next();
      PLIMSOLL_TRY(parse_args(&e->args));
    }
    e->operand = std::move(operand);
    PLIMSOLL_ASSIGN(operand, finish(std::move(e)));
  }
  return operand;
}

Status Parser::parse_args(ArgExprs* args) {  // after "(", through ")"
  while (!is_op(")")) {
    if (peek().kind == TokenKind::kName && is_op("=", 1)) {
      std::string name = next().text;
      next();
      PLIMSOLL_ASSIGN(ExprPtr value, parse_expression());
      args->keyword.emplace_back(std::move(name), std::move(value));
    } else {
      PLIMSOLL_ASSIGN(ExprPtr value, parse_expression());
      args->positional.push_back(std::move(value));
    }
    if (!is_op(",")) break;
    next();
  }
  return expect_op(")");
}

Result<ExprPtr> Parser::parse_postfix() {
  PLIMSOLL_ASSIGN(ExprPtr e, parse_primary());
  while (true) {
    if (is_op(".")) {
      const Token& token = next();
      ExprPtr member = make_expr(ExprKind::kMember, token);
      PLIMSOLL_ASSIGN(member->name, expect_name());
      member->operand = std::move(e);
      PLIMSOLL_ASSIGN(e, finish(std::move(member)));
    } else if (is_op("[")) {
      const Token& token = next();
      PLIMSOLL_ASSIGN(ExprPtr subscript, parse_subscript(std::move(e), token));
      PLIMSOLL_ASSIGN(e, finish(std::move(subscript)));
    } else if (is_op("(")) {
      const Token& token = next();
      ExprPtr call = make_expr(ExprKind::kCall, token);
      PLIMSOLL_TRY(parse_args(&call->args));
      call->operand = std::move(e);
      PLIMSOLL_ASSIGN(e, finish(std::move(call)));
    } else {
      return e;
    }
  }
}

Result<ExprPtr> Parser::parse_subscript(ExprPtr object, const Token& open) {
  ExprPtr parts[3];
  int colons = 0;
  while (!is_op("]")) {
    if (is_op(":")) {
      if (++colons > 2) return error_at(peek(), "too many ':' in a slice");
      next();
      continue;
    }
    if (parts[colons]) return error_at(peek(), "expected ':' or ']'");
    PLIMSOLL_ASSIGN(parts[colons], parse_expression());
  }
  next();
  if (colons == 0) {
    if (!parts[0]) return error_at(open, "empty subscript");
    ExprPtr e = make_expr(ExprKind::kIndex, open);
    e->operand = std::move(object);
    e->index = std::move(parts[0]);
    return e;
  }
  ExprPtr e = make_expr(ExprKind::kSlice, open);
  e->operand = std::move(object);
  for (int k = 0; k < 3; ++k) e->slice[k] = std::move(parts[k]);
  return e;
}

Result<ExprPtr> Parser::parse_primary() {
  const Token& token = next();
  switch (token.kind) {
    case TokenKind::kString: {
      ExprPtr e = make_expr(ExprKind::kLiteral, token);
      std::string text = token.text;
      while (peek().kind == TokenKind::kString) text += next().text;  // "a" "b"
      e->literal = Value(std::move(text));
      return e;
    }
    case TokenKind::kInt: {
      int64_t v = 0;
      const auto r = std::from_chars(token.text.data(), token.text.data() + token.text.size(), v);
      if (r.ec != std::errc()) return error_at(token, "integer literal out of range");
      ExprPtr e = make_expr(ExprKind::kLiteral, token);
      e->literal = Value(v);
      return e;
    }
    case TokenKind::kFloat: {
      double v = 0;  // digits '.' digits; from_chars never throws (stod would past 1e308)
      const auto r = std::from_chars(token.text.data(), token.text.data() + token.text.size(), v);
      if (r.ec != std::errc()) return error_at(token, "float literal out of range");
      ExprPtr e = make_expr(ExprKind::kLiteral, token);
      e->literal = Value(v);
      return e;
    }
    case TokenKind::kName: {
      ExprPtr e = make_expr(ExprKind::kLiteral, token);
      if (token.text == "true" || token.text == "True") e->literal = Value(true);
      else if (token.text == "false" || token.text == "False") e->literal = Value(false);
      else if (token.text == "none" || token.text == "None") e->literal = Value::none();
      else {
        e->kind = ExprKind::kName;
        e->name = token.text;
      }
      return e;
    }
    case TokenKind::kOperator: break;
    default: return error_at(token, "expected an expression, found '" + token.text + "'");
  }
  if (token.text == "(") {
    PLIMSOLL_ASSIGN(ExprPtr inner, parse_expression());
    if (is_op(",")) return error_at(peek(), "tuples are not supported", ErrorCode::kUnsupported);
    PLIMSOLL_TRY(expect_op(")"));
    return inner;
  }
  if (token.text == "[") {
    ExprPtr e = make_expr(ExprKind::kList, token);
    while (!is_op("]")) {
      PLIMSOLL_ASSIGN(ExprPtr item, parse_expression());
      e->items.push_back(std::move(item));
      if (!is_op(",")) break;
      next();
    }
    PLIMSOLL_TRY(expect_op("]"));
    return finish(std::move(e));
  }
  if (token.text == "{") {
    ExprPtr e = make_expr(ExprKind::kDict, token);
    while (!is_op("}")) {
      PLIMSOLL_ASSIGN(ExprPtr key, parse_expression());
      PLIMSOLL_TRY(expect_op(":"));
      PLIMSOLL_ASSIGN(ExprPtr value, parse_expression());
      e->entries.emplace_back(std::move(key), std::move(value));
      if (!is_op(",")) break;
      next();
    }
    PLIMSOLL_TRY(expect_op("}"));
    return finish(std::move(e));
  }
  return error_at(token, "expected an expression, found '" + token.text + "'");
}

}  // namespace

Result<Body> parse(const std::vector<Token>& tokens) {
  Parser parser(tokens);
  std::string stop;
  return parser.parse_body({}, &stop);
}

}  // namespace plimsoll::jinja
