// The evaluator: scopes (a chain of frames; for-loops and macros open one),
// statements with break/continue, and expressions with HF's operator rules,
// integer arithmetic checked and every step and allocation within the budget.
#include "chat/jinja_eval.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "chat/jinja_builtins.h"
#include "chat/jinja_math.h"

namespace plimsoll::jinja {
namespace {

// Scopes are shared so that a macro can tell whether the scope it was defined
// in still exists (it holds a weak reference; see make_macro).
class Scope : public std::enable_shared_from_this<Scope> {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  Value lookup(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent_.get()) {
      if (const Value* v = s->vars_.find(name)) return *v;
    }
    return Value();
  }
  void set(const std::string& name, Value value) { vars_.set(name, std::move(value)); }

 private:
  std::shared_ptr<Scope> parent_;
  Object vars_;  // few names per scope: a list searched in order is fastest
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { kNormal, kBreak, kContinue };

class Evaluator {
 public:
  explicit Evaluator(Budget& budget) : budget_(budget) {}
  Result<Flow> exec(const Body& body, Scope& scope, TextSink& out);
  Result<Value> eval(const Expr& e, Scope& scope);

 private:
  // Counts evaluation recursion (kMaxEvalNesting) for its lifetime.
  class Nesting {
   public:
    explicit Nesting(int* depth) : depth_(depth) { ++*depth_; }
    ~Nesting() { --*depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    int* depth_;
  };
  Status check_nesting(SourcePos pos) const;

  Result<Value> eval_node(const Expr& e, Scope& scope);
  Result<Flow> exec_one(const Stmt& s, Scope& scope, TextSink& out);
  Result<Flow> exec_for(const Stmt& s, Scope& scope, TextSink& out);
  Status exec_set(const Stmt& s, Scope& scope);
  Value make_macro(const Stmt& s, Scope& scope);
  Result<Value> call_macro(const Stmt& macro, const ScopePtr& defined_in, CallArgs& args);
  Result<CallArgs> eval_args(const ArgExprs& args, Scope& scope, SourcePos pos);
  Result<Value> eval_binary(const Expr& e, Scope& scope);
  Result<Value> eval_member(const Value& object, const std::string& name, SourcePos pos);
  Result<Value> eval_index(const Value& object, const Value& index, SourcePos pos);
  Result<Value> eval_slice(const Expr& e, Scope& scope);
  Result<Value> eval_call(const Expr& e, Scope& scope);
  Result<Value> iteration_items(const Value& v, SourcePos pos);
  Result<Value> concat_text(const Value& l, const Value& r, SourcePos pos, const char* what);
  Result<Value> repeat_text(const std::string& text, int64_t times, SourcePos pos);
  Result<Value> arithmetic(const std::string& op, const Value& l, const Value& r, SourcePos pos);
  Result<Value> compare(const std::string& op, const Value& l, const Value& r, SourcePos pos);
  Result<Value> contains(const Value& item, const Value& container, SourcePos pos);

  Budget& budget_;
  int nesting_ = 0;
};

Status Evaluator::check_nesting(SourcePos pos) const {
  if (nesting_ <= kMaxEvalNesting) return Status::ok_status();
  return eval_error(pos, "evaluation nests deeper than " + std::to_string(kMaxEvalNesting) + " levels");
}

Result<Flow> Evaluator::exec(const Body& body, Scope& scope, TextSink& out) {
  for (const StmtPtr& s : body) {
    PLIMSOLL_ASSIGN(const Flow flow, exec_one(*s, scope, out));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Result<Flow> Evaluator::exec_one(const Stmt& s, Scope& scope, TextSink& out) {
  const Nesting nesting(&nesting_);
  PLIMSOLL_TRY(check_nesting(s.pos));
  PLIMSOLL_TRY(budget_.step(s.pos));
  switch (s.kind) {
    case StmtKind::kText: PLIMSOLL_TRY(out.append(s.text, s.pos)); return Flow::kNormal;
    case StmtKind::kOutput: {
      PLIMSOLL_ASSIGN(const Value v, eval(*s.expr, scope));
      PLIMSOLL_TRY(out.append_value(v, s.pos));
      return Flow::kNormal;
    }
    case StmtKind::kIf: {
      PLIMSOLL_ASSIGN(const Value cond, eval(*s.expr, scope));
      return exec(cond.truthy() ? s.body : s.else_body, scope, out);
    }
    case StmtKind::kFor: return exec_for(s, scope, out);
    case StmtKind::kSet: PLIMSOLL_TRY(exec_set(s, scope)); return Flow::kNormal;
    case StmtKind::kMacro: scope.set(s.targets[0], make_macro(s, scope)); return Flow::kNormal;
    case StmtKind::kBreak: return Flow::kBreak;
    case StmtKind::kContinue: return Flow::kContinue;
  }
  return Flow::kNormal;
}

// What a for loop walks: a list as it is (shared, not copied), a dict's keys,
// a string's characters (UTF-8 sequences), each built within the budget.
Result<Value> Evaluator::iteration_items(const Value& v, SourcePos pos) {
  if (v.is_array()) return v;
  if (v.is_mapping()) {
    const auto& items = v.as_object().items;
    int64_t bytes = static_cast<int64_t>(items.size()) * kItemBytes;
    for (const auto& [k, item] : items) bytes += kItemBytes + static_cast<int64_t>(k.size());
    PLIMSOLL_TRY(budget_.reserve(bytes, pos, "looping over a dict"));
    Array keys;
    keys.reserve(items.size());
    for (const auto& [k, item] : items) keys.emplace_back(k);
    return Value(std::move(keys));
  }
  if (v.is_string()) {
    const std::string& s = v.as_string();
    const auto is_lead = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
    const auto n = static_cast<size_t>(std::count_if(s.begin(), s.end(), is_lead));
    // Each character is a list item and a string of its own.
    PLIMSOLL_TRY(budget_.reserve(static_cast<int64_t>(n) * 2 * kItemBytes, pos, "looping over a string"));
    Array chars;
    chars.reserve(n);
    for (size_t i = 0; i < s.size();) {
      size_t len = 1;
      while (i + len < s.size() && !is_lead(s[i + len])) ++len;
      chars.emplace_back(s.substr(i, len));
      i += len;
    }
    return Value(std::move(chars));
  }
  if (v.is_undefined() || v.is_none()) return Value(Array{});
  return eval_error(pos, std::string("cannot loop over a ") + v.type_name());
}

Status bind_targets(const Stmt& s, const Value& item, Scope& scope) {
  if (s.targets.size() == 1) {
    scope.set(s.targets[0], item);
    return Status::ok_status();
  }
  if (!item.is_array() || item.as_array().size() != s.targets.size()) {
    return eval_error(s.pos, "cannot unpack a loop item into " + std::to_string(s.targets.size()) + " names");
  }
  for (size_t i = 0; i < s.targets.size(); ++i) scope.set(s.targets[i], item.as_array()[i]);
  return Status::ok_status();
}

Result<Flow> Evaluator::exec_for(const Stmt& s, Scope& scope, TextSink& out) {
  PLIMSOLL_ASSIGN(const Value iterable, eval(*s.expr, scope));
  PLIMSOLL_ASSIGN(const Value walked, iteration_items(iterable, s.pos));
  const Array& all = walked.as_array();
  // The loop's `if` filter runs before loop.* is known: the kept positions.
  std::vector<size_t> kept;
  if (s.filter) {
    const auto bytes = static_cast<int64_t>(all.size() * sizeof(size_t));
    PLIMSOLL_TRY(budget_.reserve(bytes, s.pos, "a filtered loop"));
    kept.reserve(all.size());
    budget_.meter()->add(bytes);
    struct Release {
      Budget& budget;
      int64_t bytes;
      ~Release() { budget.meter()->sub(bytes); }
    } release{budget_, bytes};
    for (size_t k = 0; k < all.size(); ++k) {
      PLIMSOLL_TRY(budget_.step(s.pos));
      auto probe = std::make_shared<Scope>(scope.shared_from_this());
      PLIMSOLL_TRY(bind_targets(s, all[k], *probe));
      PLIMSOLL_ASSIGN(const Value keep, eval(*s.filter, *probe));
      if (keep.truthy()) kept.push_back(k);
    }
  }
  const auto n = static_cast<int64_t>(s.filter ? kept.size() : all.size());
  const auto item = [&](int64_t i) -> const Value& {
    return all[s.filter ? kept[static_cast<size_t>(i)] : static_cast<size_t>(i)];
  };
  if (n == 0) return exec(s.else_body, scope, out);
  for (int64_t i = 0; i < n; ++i) {
    PLIMSOLL_TRY(budget_.step(s.pos));
    auto inner = std::make_shared<Scope>(scope.shared_from_this());
    PLIMSOLL_TRY(bind_targets(s, item(i), *inner));
    Object loop;  // distinct keys: appended, not set
    loop.items.reserve(9);
    loop.items.emplace_back("index", Value(i + 1));
    loop.items.emplace_back("index0", Value(i));
    loop.items.emplace_back("revindex", Value(n - i));
    loop.items.emplace_back("revindex0", Value(n - i - 1));
    loop.items.emplace_back("first", Value(i == 0));
    loop.items.emplace_back("last", Value(i == n - 1));
    loop.items.emplace_back("length", Value(n));
    loop.items.emplace_back("previtem", i > 0 ? item(i - 1) : Value());
    loop.items.emplace_back("nextitem", i + 1 < n ? item(i + 1) : Value());
    inner->set("loop", Value::object(std::move(loop)));
    PLIMSOLL_ASSIGN(const Flow flow, exec(s.body, *inner, out));
    if (flow == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

Status Evaluator::exec_set(const Stmt& s, Scope& scope) {
  Value value;
  if (s.expr) {
    PLIMSOLL_ASSIGN(value, eval(*s.expr, scope));
  } else {
    TextSink text(budget_, /*is_output=*/false);
    PLIMSOLL_TRY(exec(s.body, scope, text));
    value = Value(text.take());
  }
  if (s.attr.empty()) {
    scope.set(s.targets[0], std::move(value));
    return Status::ok_status();
  }
  const Value target = scope.lookup(s.targets[0]);
  const std::string where = "set " + s.targets[0] + "." + s.attr;
  if (target.kind() != Kind::kNamespace) {
    return eval_error(s.pos, where + ": '" + s.targets[0] + "' is not a namespace");
  }
  // Namespaces are the only values that change after they are built. Keeping
  // namespaces out of their attributes means no value can contain itself, and
  // no change can nest a value deeper than twice kMaxValueDepth.
  if (value.holds_namespace()) return eval_error(s.pos, where + ": a namespace attribute cannot hold a namespace");
  if (value.depth() >= kMaxValueDepth) {
    return eval_error(s.pos, where + ": the value nests deeper than " + std::to_string(kMaxValueDepth - 1));
  }
  target.as_object().set(s.attr, std::move(value));
  return Status::ok_status();
}

// A macro sees the scope it was defined in. That scope may end before the
// macro is called (a macro defined in a loop body and kept in a namespace):
// the macro holds it weakly and such a call is an error, never a read of
// freed memory. (Holding it strongly would make a cycle: scope -> macro -> scope.)
Value Evaluator::make_macro(const Stmt& s, Scope& scope) {
  const Stmt* macro = &s;
  std::weak_ptr<Scope> defined_in = scope.weak_from_this();
  return Value::function([this, macro, defined_in](CallArgs& args) -> Result<Value> {
    const ScopePtr parent = defined_in.lock();
    if (!parent) {
      return eval_error(macro->pos, "macro '" + macro->targets[0] +
                                        "' was called after the block it was defined in had ended");
    }
    return call_macro(*macro, parent, args);
  });
}

Result<Value> Evaluator::call_macro(const Stmt& macro, const ScopePtr& defined_in, CallArgs& args) {
  PLIMSOLL_TRY(budget_.enter_call(macro.pos));
  struct Leave {
    Budget& budget;
    ~Leave() { budget.leave_call(); }
  } leave{budget_};
  auto local = std::make_shared<Scope>(defined_in);
  for (size_t i = 0; i < macro.params.size(); ++i) {
    const auto& [name, fallback] = macro.params[i];
    Value v = args.get(i, name);
    if (v.is_undefined() && fallback) {
      PLIMSOLL_ASSIGN(v, eval(*fallback, *local));
    }
    local->set(name, std::move(v));
  }
  TextSink text(budget_, /*is_output=*/false);
  PLIMSOLL_TRY(exec(macro.body, *local, text));
  return Value(text.take());
}

Result<CallArgs> Evaluator::eval_args(const ArgExprs& args, Scope& scope, SourcePos pos) {
  CallArgs out;
  out.budget = &budget_;
  out.pos = pos;
  for (const ExprPtr& e : args.positional) {
    PLIMSOLL_ASSIGN(Value v, eval(*e, scope));
    out.positional.push_back(std::move(v));
  }
  for (const auto& [name, e] : args.keyword) {
    PLIMSOLL_ASSIGN(Value v, eval(*e, scope));
    out.keyword.emplace_back(name, std::move(v));
  }
  return out;
}

Result<Value> Evaluator::eval(const Expr& e, Scope& scope) {
  const Nesting nesting(&nesting_);
  PLIMSOLL_TRY(check_nesting(e.pos));
  PLIMSOLL_TRY(budget_.step(e.pos));
  PLIMSOLL_ASSIGN(Value v, eval_node(e, scope));
  if (v.depth() > kMaxValueDepth) {
    return eval_error(e.pos, "a value nests deeper than " + std::to_string(kMaxValueDepth) + " lists and dicts");
  }
  return v;
}

Result<Value> Evaluator::eval_node(const Expr& e, Scope& scope) {
  switch (e.kind) {
    case ExprKind::kLiteral: return e.literal;
    case ExprKind::kName: return scope.lookup(e.name);
    case ExprKind::kList: {
      Array items;
      items.reserve(e.items.size());
      for (const ExprPtr& item : e.items) {
        PLIMSOLL_ASSIGN(Value v, eval(*item, scope));
        items.push_back(std::move(v));
      }
      return Value(std::move(items));
    }
    case ExprKind::kDict: {
      Object o;
      for (const auto& [key_expr, value_expr] : e.entries) {
        PLIMSOLL_ASSIGN(const Value key, eval(*key_expr, scope));
        if (!key.is_string()) return eval_error(e.pos, "dict keys must be strings");
        PLIMSOLL_ASSIGN(Value value, eval(*value_expr, scope));
        o.set(key.as_string(), std::move(value));
      }
      return Value::object(std::move(o));
    }
    case ExprKind::kMember: {
      PLIMSOLL_ASSIGN(const Value object, eval(*e.operand, scope));
      return eval_member(object, e.name, e.pos);
    }
    case ExprKind::kIndex: {
      PLIMSOLL_ASSIGN(const Value object, eval(*e.operand, scope));
      PLIMSOLL_ASSIGN(const Value index, eval(*e.index, scope));
      return eval_index(object, index, e.pos);
    }
    case ExprKind::kSlice: return eval_slice(e, scope);
    case ExprKind::kCall: return eval_call(e, scope);
    case ExprKind::kFilter: {
      PLIMSOLL_ASSIGN(const Value operand, eval(*e.operand, scope));
      PLIMSOLL_ASSIGN(CallArgs args, eval_args(e.args, scope, e.pos));
      return apply_filter(e.name, operand, args, e.pos);
    }
    case ExprKind::kTest: {
      PLIMSOLL_ASSIGN(const Value operand, eval(*e.operand, scope));
      PLIMSOLL_ASSIGN(CallArgs args, eval_args(e.args, scope, e.pos));
      PLIMSOLL_ASSIGN(const bool result, apply_test(e.name, operand, args, e.pos));
      return Value(result != e.negated);
    }
    case ExprKind::kUnary: {
      PLIMSOLL_ASSIGN(const Value v, eval(*e.operand, scope));
      if (e.name == "not") return Value(!v.truthy());
      if (!v.is_number()) return eval_error(e.pos, "unary " + e.name + " on a " + v.type_name());
      if (e.name == "+") return v;
      if (v.kind() == Kind::kFloat) return Value(-v.as_number());
      PLIMSOLL_ASSIGN(const int64_t negated, checked_negate(v.as_int(), e.pos));
      return Value(negated);
    }
    case ExprKind::kBinary: return eval_binary(e, scope);
    case ExprKind::kTernary: {
      PLIMSOLL_ASSIGN(const Value cond, eval(*e.condition, scope));
      if (cond.truthy()) return eval(*e.operand, scope);
      return e.otherwise ? eval(*e.otherwise, scope) : Result<Value>(Value());
    }
  }
  return eval_error(e.pos, "unknown expression");
}

Result<Value> Evaluator::eval_member(const Value& object, const std::string& name, SourcePos pos) {
  if (object.is_object_like()) {
    if (const Value* v = object.as_object().find(name)) return *v;
    if (object.is_mapping()) return bound_method(object, name, pos);
    return Value();
  }
  if (object.is_string()) {
    if (name == "length") return Value(static_cast<int64_t>(object.as_string().size()));
    return bound_method(object, name, pos);
  }
  if (object.is_array() && name == "length") return Value(static_cast<int64_t>(object.as_array().size()));
  if (object.is_undefined()) return eval_error(pos, "cannot read '" + name + "' of an undefined value");
  if (object.is_none()) return eval_error(pos, "cannot read '" + name + "' of none");
  return Value();
}

// A negative index counts from the end (index >= INT64_MIN and size >= 0: no overflow).
int64_t normalize_index(int64_t index, int64_t size) { return index < 0 ? index + size : index; }

Result<Value> Evaluator::eval_index(const Value& object, const Value& index, SourcePos pos) {
  if (index.is_string()) return eval_member(object, index.as_string(), pos);
  if (index.kind() != Kind::kInt) {
    return eval_error(pos, std::string("an index must be an integer or string, not a ") + index.type_name());
  }
  if (object.is_array()) {
    const auto size = static_cast<int64_t>(object.as_array().size());
    const int64_t i = normalize_index(index.as_int(), size);
    if (i < 0 || i >= size) return Value();
    return object.as_array()[static_cast<size_t>(i)];
  }
  if (object.is_string()) {
    const std::string& s = object.as_string();
    const auto size = static_cast<int64_t>(s.size());
    const int64_t i = normalize_index(index.as_int(), size);
    if (i < 0 || i >= size) return Value();
    return Value(s.substr(static_cast<size_t>(i), 1));
  }
  if (object.is_undefined()) return eval_error(pos, "cannot index an undefined value");
  return eval_error(pos, std::string("cannot index a ") + object.type_name());
}

Result<Value> Evaluator::eval_slice(const Expr& e, Scope& scope) {
  PLIMSOLL_ASSIGN(const Value object, eval(*e.operand, scope));
  int64_t parts[3] = {0, 0, 1};
  bool given[3] = {false, false, false};
  const Expr* exprs[3] = {e.slice[0].get(), e.slice[1].get(), e.slice[2].get()};
  for (int k = 0; k < 3; ++k) {
    if (exprs[k] == nullptr) continue;
    PLIMSOLL_ASSIGN(const Value v, eval(*exprs[k], scope));
    if (v.is_none() || v.is_undefined()) continue;
    if (v.kind() != Kind::kInt) return eval_error(e.pos, "slice bounds must be integers");
    parts[k] = v.as_int();
    given[k] = true;
  }
  const int64_t step = parts[2];
  if (step == 0) return eval_error(e.pos, "slice step cannot be zero");
  const bool is_string = object.is_string();
  if (!is_string && !object.is_array()) return eval_error(e.pos, std::string("cannot slice a ") + object.type_name());
  const auto size = static_cast<int64_t>(is_string ? object.as_string().size() : object.as_array().size());
  auto clamp = [&](int64_t v, bool present, int64_t fallback) {
    if (!present) return fallback;
    v = normalize_index(v, size);
    return step > 0 ? std::clamp<int64_t>(v, 0, size) : std::clamp<int64_t>(v, -1, size - 1);
  };
  const int64_t start = clamp(parts[0], given[0], step > 0 ? 0 : size - 1);
  const int64_t stop = clamp(parts[1], given[1], step > 0 ? size : -1);
  // start and stop lie in [-1, size]: their distance fits, and so does
  // k * step for every k below the count.
  const int64_t distance = step > 0 ? stop - start : start - stop;
  const uint64_t stride = step > 0 ? static_cast<uint64_t>(step) : uint64_t{0} - static_cast<uint64_t>(step);
  const int64_t count = distance <= 0 ? 0 : static_cast<int64_t>((static_cast<uint64_t>(distance) - 1) / stride + 1);
  PLIMSOLL_TRY(budget_.reserve(is_string ? count : count * kItemBytes, e.pos, "a slice"));
  std::string text;
  Array items;
  if (is_string) text.reserve(static_cast<size_t>(count));
  else items.reserve(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    const auto i = static_cast<size_t>(start + k * step);
    if (is_string) text += object.as_string()[i];
    else items.push_back(object.as_array()[i]);
  }
  return is_string ? Value(std::move(text)) : Value(std::move(items));
}

Result<Value> Evaluator::eval_call(const Expr& e, Scope& scope) {
  PLIMSOLL_ASSIGN(const Value callee, eval(*e.operand, scope));
  if (callee.kind() != Kind::kFunction) {
    std::string what = e.operand->kind == ExprKind::kName     ? "function '" + e.operand->name + "'"
                       : e.operand->kind == ExprKind::kMember ? "method '" + e.operand->name + "'"
                                                        : std::string("this call");
    return unsupported_error(e.pos, what);
  }
  PLIMSOLL_ASSIGN(CallArgs args, eval_args(e.args, scope, e.pos));
  Result<Value> result = callee.as_function()(args);
  if (!result.ok() && result.error().message.starts_with("chat template raised: ")) return result;
  if (!result.ok() && !result.error().message.starts_with("chat template ")) {
    return result.error().with_context("chat template " + e.pos.text());
  }
  return result;
}

Result<Value> Evaluator::compare(const std::string& op, const Value& l, const Value& r, SourcePos pos) {
  int order = 0;
  if (l.kind() == Kind::kInt && r.kind() == Kind::kInt) {
    order = l.as_int() < r.as_int() ? -1 : l.as_int() > r.as_int() ? 1 : 0;
  } else if (l.is_number() && r.is_number()) {
    order = l.as_number() < r.as_number() ? -1 : l.as_number() > r.as_number() ? 1 : 0;
  } else if (l.is_string() && r.is_string()) {
    PLIMSOLL_TRY(budget_.step(pos, static_cast<int64_t>(std::min(l.as_string().size(), r.as_string().size()))));
    order = l.as_string().compare(r.as_string());
  } else {
    return eval_error(pos, "cannot compare a " + std::string(l.type_name()) + " with a " + r.type_name());
  }
  if (op == "<") return Value(order < 0);
  if (op == ">") return Value(order > 0);
  if (op == "<=") return Value(order <= 0);
  return Value(order >= 0);
}

Result<Value> Evaluator::contains(const Value& item, const Value& container, SourcePos pos) {
  if (container.is_undefined()) return Value(false);
  if (container.is_array()) {
    PLIMSOLL_TRY(budget_.step(pos, static_cast<int64_t>(container.as_array().size()) * kItemBytes));
    for (const Value& v : container.as_array()) {
      if (values_equal(v, item)) return Value(true);
    }
    return Value(false);
  }
  if (container.is_string() && item.is_string()) {
    PLIMSOLL_TRY(budget_.step(pos, static_cast<int64_t>(container.as_string().size())));
    return Value(container.as_string().find(item.as_string()) != std::string::npos);
  }
  if (container.is_object_like() && item.is_string()) {
    return Value(container.as_object().find(item.as_string()) != nullptr);
  }
  return eval_error(pos, std::string("'in' on a ") + container.type_name());
}

Error division_by_zero(SourcePos pos, const std::string& op, const Value& l, const Value& r) {
  return eval_error(pos, std::string(op == "%" ? "modulo" : "division") + " by zero in " + number_text(l) + " " +
                             op + " " + number_text(r));
}

Result<Value> Evaluator::arithmetic(const std::string& op, const Value& l, const Value& r, SourcePos pos) {
  const double a = l.as_number(), b = r.as_number();
  if ((op == "/" || op == "//" || op == "%") && b == 0) return division_by_zero(pos, op, l, r);
  if (op == "/") return Value(a / b);
  if (l.kind() == Kind::kInt && r.kind() == Kind::kInt && !(op == "**" && r.as_int() < 0)) {
    PLIMSOLL_ASSIGN(const int64_t v, checked_int_op(op, l.as_int(), r.as_int(), pos));
    return Value(v);
  }
  if (op == "**" && a == 0 && b < 0) return division_by_zero(pos, op, l, r);  // Python: ZeroDivisionError
  if (op == "+") return Value(a + b);
  if (op == "-") return Value(a - b);
  if (op == "*") return Value(a * b);
  if (op == "//") return Value(std::floor(a / b));
  if (op == "%") return Value(a - b * std::floor(a / b));
  if (op == "**") return Value(std::pow(a, b));
  return eval_error(pos, "cannot apply '" + op + "' to numbers");
}

// l ~ r, and + with a string: both as {{ }} prints them, within the budget.
Result<Value> Evaluator::concat_text(const Value& l, const Value& r, SourcePos pos, const char* what) {
  const int64_t room = budget_.room_bytes();
  std::string text;
  if (l.is_string() && r.is_string()) {
    const auto bytes = static_cast<int64_t>(l.as_string().size() + r.as_string().size());
    PLIMSOLL_TRY(budget_.reserve(bytes, pos, what));
    text.reserve(static_cast<size_t>(bytes));
  }
  if (!l.append_output(&text, static_cast<size_t>(room)) || !r.append_output(&text, static_cast<size_t>(room))) {
    return budget_.held_error(room + 1, pos, what);
  }
  PLIMSOLL_TRY(budget_.step(pos, static_cast<int64_t>(text.size())));
  return Value(std::move(text));
}

Result<Value> Evaluator::repeat_text(const std::string& text, int64_t times, SourcePos pos) {
  if (times <= 0 || text.empty()) return Value(std::string());
  int64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<int64_t>(text.size()), times, &bytes)) bytes = INT64_MAX;
  std::string what = "'*' (";
  what += std::to_string(text.size());
  what += " bytes x ";
  what += std::to_string(times);
  what += ")";
  PLIMSOLL_TRY(budget_.reserve(bytes, pos, what));
  std::string out;
  out.reserve(static_cast<size_t>(bytes));
  for (int64_t i = 0; i < times; ++i) out += text;
  return Value(std::move(out));
}

Result<Value> Evaluator::eval_binary(const Expr& e, Scope& scope) {
  const std::string& op = e.name;
  PLIMSOLL_ASSIGN(const Value l, eval(*e.operand, scope));
  if (op == "and") return l.truthy() ? eval(*e.rhs, scope) : Result<Value>(l);
  if (op == "or") return l.truthy() ? Result<Value>(l) : eval(*e.rhs, scope);
  PLIMSOLL_ASSIGN(const Value r, eval(*e.rhs, scope));
  if (op == "==" || op == "!=") {
    if (l.is_string() && r.is_string()) {
      PLIMSOLL_TRY(budget_.step(e.pos, static_cast<int64_t>(std::min(l.as_string().size(), r.as_string().size()))));
    }
    return Value(values_equal(l, r) == (op == "=="));
  }
  if (op == "in" || op == "not in") {
    PLIMSOLL_ASSIGN(const Value found, contains(l, r, e.pos));
    return Value(found.as_bool() == (op == "in"));
  }
  if (op == "~") return concat_text(l, r, e.pos, "'~'");
  if (l.is_undefined() || r.is_undefined()) return eval_error(e.pos, "'" + op + "' on an undefined value");
  if (l.is_none() || r.is_none()) return eval_error(e.pos, "'" + op + "' on none");
  if (op == "<" || op == ">" || op == "<=" || op == ">=") return compare(op, l, r, e.pos);
  if (l.is_number() && r.is_number()) return arithmetic(op, l, r, e.pos);
  if (op == "+" && l.is_array() && r.is_array()) {
    const size_t n = l.as_array().size() + r.as_array().size();
    PLIMSOLL_TRY(budget_.reserve(static_cast<int64_t>(n) * kItemBytes, e.pos, "'+' of two lists"));
    Array joined;
    joined.reserve(n);
    joined.insert(joined.end(), l.as_array().begin(), l.as_array().end());
    joined.insert(joined.end(), r.as_array().begin(), r.as_array().end());
    return Value(std::move(joined));
  }
  if (op == "+" && (l.is_string() || r.is_string())) return concat_text(l, r, e.pos, "'+'");
  if (op == "*" && l.is_string() && r.kind() == Kind::kInt) return repeat_text(l.as_string(), r.as_int(), e.pos);
  return eval_error(e.pos, "cannot apply '" + op + "' to a " + l.type_name() + " and a " + r.type_name());
}

}  // namespace

Result<std::string> render(const Body& body, const Object& context, const RenderLimits& limits) {
  // Declared first, freed last: every value the render builds is freed
  // (and uncounted) before the budget and its meter go.
  Budget budget(limits);
  const MeterScope meter(budget.meter());
  auto globals = std::make_shared<Scope>(nullptr);
  for (auto& [name, value] : make_globals().items) globals->set(name, value);
  auto top = std::make_shared<Scope>(globals);
  for (const auto& [name, value] : context.items) top->set(name, value);
  Evaluator evaluator(budget);
  TextSink out(budget, /*is_output=*/true);
  PLIMSOLL_TRY(evaluator.exec(body, *top, out));
  return out.take();
}

}  // namespace plimsoll::jinja
