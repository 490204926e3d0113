// The Jinja syntax tree: expressions and statements as the parser builds them
// and the evaluator walks them; every node keeps its source position.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_lexer.h"
#include "chat/jinja_value.h"

namespace plimsoll::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct ArgExprs {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
};

enum class ExprKind {
  kLiteral,   // literal
  kName,      // name
  kList,      // items
  kDict,      // entries
  kMember,    // operand.name
  kIndex,     // operand[index]
  kSlice,     // operand[slice[0]:slice[1]:slice[2]] (start, stop, step; missing parts null)
  kCall,      // operand(args)
  kFilter,    // operand | name(args)
  kTest,      // operand is [not] name(args)
  kUnary,     // name=op ("not", "-", "+") applied to operand
  kBinary,    // operand name=op rhs
  kTernary,   // operand if condition else otherwise (otherwise may be null)
};

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  SourcePos pos;
  Value literal;
  std::string name;
  ExprPtr operand;    // what the member, index, slice, call, filter, test or unary acts on; binary's left
  ExprPtr rhs;        // binary: the right side
  ExprPtr index;      // index: the subscript
  ExprPtr slice[3];   // slice: start, stop, step
  ExprPtr condition;  // ternary: the test
  ExprPtr otherwise;  // ternary: the else value (null: none)
  std::vector<ExprPtr> items;
  std::vector<std::pair<ExprPtr, ExprPtr>> entries;
  ArgExprs args;
  bool negated = false;
  int depth = 1;  // of this subtree (the parser bounds it)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  kText,      // text
  kOutput,    // {{ expr }}
  kIf,        // if expr: body, else_body (elif: one nested kIf)
  kFor,       // for targets in expr [if filter]: body, else_body
  kSet,       // set targets[0] (or targets[0].attr) = expr, or a block set (body)
  kMacro,     // macro targets[0](params): body
  kBreak,
  kContinue,
};

struct Stmt {
  StmtKind kind = StmtKind::kText;
  SourcePos pos;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<std::string> targets;
  std::string attr;
  Body body;
  Body else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters and defaults
};

}  // namespace plimsoll::jinja
