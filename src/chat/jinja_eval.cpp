// The evaluator: scopes (a chain of frames; for-loops and macros open one),
// statements with break/continue, and expressions with HF's operator rules.
#include "chat/jinja_eval.h"

#include <cmath>
#include <unordered_map>

#include "chat/jinja_builtins.h"

namespace plimsoll::jinja {
namespace {

class Scope {
 public:
  explicit Scope(Scope* parent) : parent_(parent) {}
  Value lookup(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent_) {
      if (const auto it = s->vars_.find(name); it != s->vars_.end()) return it->second;
    }
    return Value();
  }
  void set(const std::string& name, Value value) { vars_[name] = std::move(value); }

 private:
  Scope* parent_;
  std::unordered_map<std::string, Value> vars_;
};

enum class Flow { kNormal, kBreak, kContinue };

constexpr int kMaxDepth = 256;  // macro recursion and nesting

class Evaluator {
 public:
  Result<Flow> exec(const Body& body, Scope& scope, std::string* out);
  Result<Value> eval(const Expr& e, Scope& scope);

 private:
  Result<Flow> exec_one(const Stmt& s, Scope& scope, std::string* out);
  Result<Flow> exec_for(const Stmt& s, Scope& scope, std::string* out);
  Status exec_set(const Stmt& s, Scope& scope);
  Value make_macro(const Stmt& s, Scope& scope);
  Result<CallArgs> eval_args(const ArgExprs& args, Scope& scope);
  Result<Value> eval_binary(const Expr& e, Scope& scope);
  Result<Value> eval_member(const Value& object, const std::string& name, SourcePos pos);
  Result<Value> eval_index(const Value& object, const Value& index, SourcePos pos);
  Result<Value> eval_slice(const Expr& e, Scope& scope);
  Result<Value> eval_call(const Expr& e, Scope& scope);

  int depth_ = 0;
};

Result<Flow> Evaluator::exec(const Body& body, Scope& scope, std::string* out) {
  for (const StmtPtr& s : body) {
    PLIMSOLL_ASSIGN(const Flow flow, exec_one(*s, scope, out));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Result<Flow> Evaluator::exec_one(const Stmt& s, Scope& scope, std::string* out) {
  switch (s.kind) {
    case StmtKind::kText: out->append(s.text); return Flow::kNormal;
    case StmtKind::kOutput: {
      PLIMSOLL_ASSIGN(const Value v, eval(*s.expr, scope));
      out->append(v.to_output());
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

Result<Array> iteration_items(const Value& v, SourcePos pos) {
  if (v.is_array()) return v.as_array();
  if (v.is_mapping()) {
    Array keys;
    for (const auto& [k, item] : v.as_object().items) keys.emplace_back(k);
    return keys;
  }
  if (v.is_string()) {
    Array chars;
    const std::string& s = v.as_string();
    for (size_t i = 0; i < s.size();) {
      size_t n = 1;
      while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80) ++n;
      chars.emplace_back(s.substr(i, n));
      i += n;
    }
    return chars;
  }
  if (v.is_undefined() || v.is_none()) return Array{};
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

Result<Flow> Evaluator::exec_for(const Stmt& s, Scope& scope, std::string* out) {
  PLIMSOLL_ASSIGN(const Value iterable, eval(*s.expr, scope));
  PLIMSOLL_ASSIGN(Array all, iteration_items(iterable, s.pos));
  Array items;
  for (const Value& item : all) {  // the loop's `if` filter runs before loop.* is known
    if (!s.filter) {
      items.push_back(item);
      continue;
    }
    Scope probe(&scope);
    PLIMSOLL_TRY(bind_targets(s, item, probe));
    PLIMSOLL_ASSIGN(const Value keep, eval(*s.filter, probe));
    if (keep.truthy()) items.push_back(item);
  }
  if (items.empty()) return exec(s.else_body, scope, out);
  const auto n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    Scope inner(&scope);
    PLIMSOLL_TRY(bind_targets(s, items[static_cast<size_t>(i)], inner));
    Object loop;
    loop.set("index", Value(i + 1));
    loop.set("index0", Value(i));
    loop.set("revindex", Value(n - i));
    loop.set("revindex0", Value(n - i - 1));
    loop.set("first", Value(i == 0));
    loop.set("last", Value(i == n - 1));
    loop.set("length", Value(n));
    loop.set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value());
    loop.set("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value());
    inner.set("loop", Value::object(std::move(loop)));
    PLIMSOLL_ASSIGN(const Flow flow, exec(s.body, inner, out));
    if (flow == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

Status Evaluator::exec_set(const Stmt& s, Scope& scope) {
  Value value;
  if (s.expr) {
    PLIMSOLL_ASSIGN(value, eval(*s.expr, scope));
  } else {
    std::string text;
    PLIMSOLL_TRY(exec(s.body, scope, &text));
    value = Value(std::move(text));
  }
  if (s.attr.empty()) {
    scope.set(s.targets[0], std::move(value));
    return Status::ok_status();
  }
  const Value target = scope.lookup(s.targets[0]);
  if (target.kind() != Kind::kNamespace) {
    return eval_error(s.pos, "set " + s.targets[0] + "." + s.attr + ": '" + s.targets[0] + "' is not a namespace");
  }
  target.as_object().set(s.attr, std::move(value));
  return Status::ok_status();
}

Value Evaluator::make_macro(const Stmt& s, Scope& scope) {
  const Stmt* macro = &s;
  Scope* defined_in = &scope;
  return Value::function([this, macro, defined_in](CallArgs& args) -> Result<Value> {
    if (++depth_ > kMaxDepth) return eval_error(macro->pos, "macros nest too deeply");
    Scope local(defined_in);
    for (size_t i = 0; i < macro->params.size(); ++i) {
      const auto& [name, fallback] = macro->params[i];
      Value v = args.get(i, name);
      if (v.is_undefined() && fallback) {
        PLIMSOLL_ASSIGN(v, eval(*fallback, local));
      }
      local.set(name, std::move(v));
    }
    std::string text;
    Result<Flow> flow = exec(macro->body, local, &text);
    --depth_;
    if (!flow.ok()) return flow.error();
    return Value(std::move(text));
  });
}

Result<CallArgs> Evaluator::eval_args(const ArgExprs& args, Scope& scope) {
  CallArgs out;
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
  switch (e.kind) {
    case ExprKind::kLiteral: return e.literal;
    case ExprKind::kName: return scope.lookup(e.name);
    case ExprKind::kList: {
      Array items;
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
      PLIMSOLL_ASSIGN(const Value object, eval(*e.a, scope));
      return eval_member(object, e.name, e.pos);
    }
    case ExprKind::kIndex: {
      PLIMSOLL_ASSIGN(const Value object, eval(*e.a, scope));
      PLIMSOLL_ASSIGN(const Value index, eval(*e.b, scope));
      return eval_index(object, index, e.pos);
    }
    case ExprKind::kSlice: return eval_slice(e, scope);
    case ExprKind::kCall: return eval_call(e, scope);
    case ExprKind::kFilter: {
      PLIMSOLL_ASSIGN(const Value operand, eval(*e.a, scope));
      PLIMSOLL_ASSIGN(CallArgs args, eval_args(e.args, scope));
      return apply_filter(e.name, operand, args, e.pos);
    }
    case ExprKind::kTest: {
      PLIMSOLL_ASSIGN(const Value operand, eval(*e.a, scope));
      PLIMSOLL_ASSIGN(CallArgs args, eval_args(e.args, scope));
      PLIMSOLL_ASSIGN(const bool result, apply_test(e.name, operand, args, e.pos));
      return Value(result != e.negated);
    }
    case ExprKind::kUnary: {
      PLIMSOLL_ASSIGN(const Value v, eval(*e.a, scope));
      if (e.name == "not") return Value(!v.truthy());
      if (!v.is_number()) return eval_error(e.pos, "unary " + e.name + " on a " + v.type_name());
      if (e.name == "+") return v;
      return v.kind() == Kind::kInt ? Value(-v.as_int()) : Value(-v.as_number());
    }
    case ExprKind::kBinary: return eval_binary(e, scope);
    case ExprKind::kTernary: {
      PLIMSOLL_ASSIGN(const Value cond, eval(*e.b, scope));
      if (cond.truthy()) return eval(*e.a, scope);
      return e.c ? eval(*e.c, scope) : Result<Value>(Value());
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

int64_t normalize_index(int64_t index, int64_t size) { return index < 0 ? index + size : index; }

Result<Value> Evaluator::eval_index(const Value& object, const Value& index, SourcePos pos) {
  if (index.is_string()) return eval_member(object, index.as_string(), pos);
  if (index.kind() != Kind::kInt) return eval_error(pos, std::string("an index must be an integer or string, not a ") + index.type_name());
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
  PLIMSOLL_ASSIGN(const Value object, eval(*e.a, scope));
  int64_t parts[3] = {0, 0, 1};
  bool given[3] = {false, false, false};
  const Expr* exprs[3] = {e.b.get(), e.c.get(), e.d.get()};
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
  std::string text;
  Array items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (is_string) text += object.as_string()[static_cast<size_t>(i)];
    else items.push_back(object.as_array()[static_cast<size_t>(i)]);
  }
  return is_string ? Value(std::move(text)) : Value(std::move(items));
}

Result<Value> Evaluator::eval_call(const Expr& e, Scope& scope) {
  PLIMSOLL_ASSIGN(const Value callee, eval(*e.a, scope));
  if (callee.kind() != Kind::kFunction) {
    std::string what = e.a->kind == ExprKind::kName ? "function '" + e.a->name + "'"
                       : e.a->kind == ExprKind::kMember ? "method '" + e.a->name + "'"
                                                          : std::string("this call");
    return unsupported_error(e.pos, what);
  }
  PLIMSOLL_ASSIGN(CallArgs args, eval_args(e.args, scope));
  Result<Value> result = callee.as_function()(args);
  if (!result.ok() && result.error().message.starts_with("chat template raised: ")) return result;
  if (!result.ok() && !result.error().message.starts_with("chat template ")) {
    return result.error().with_context("chat template " + e.pos.text());
  }
  return result;
}

Result<Value> compare(const std::string& op, const Value& l, const Value& r, SourcePos pos) {
  int order = 0;
  if (l.is_number() && r.is_number()) {
    order = l.as_number() < r.as_number() ? -1 : l.as_number() > r.as_number() ? 1 : 0;
  } else if (l.is_string() && r.is_string()) {
    order = l.as_string().compare(r.as_string());
  } else {
    return eval_error(pos, "cannot compare a " + std::string(l.type_name()) + " with a " + r.type_name());
  }
  if (op == "<") return Value(order < 0);
  if (op == ">") return Value(order > 0);
  if (op == "<=") return Value(order <= 0);
  return Value(order >= 0);
}

Result<Value> contains(const Value& item, const Value& container, SourcePos pos) {
  if (container.is_undefined()) return Value(false);
  if (container.is_array()) {
    for (const Value& v : container.as_array()) {
      if (values_equal(v, item)) return Value(true);
    }
    return Value(false);
  }
  if (container.is_string() && item.is_string()) {
    return Value(container.as_string().find(item.as_string()) != std::string::npos);
  }
  if (container.is_object_like() && item.is_string()) {
    return Value(container.as_object().find(item.as_string()) != nullptr);
  }
  return eval_error(pos, std::string("'in' on a ") + container.type_name());
}

Result<Value> arithmetic(const std::string& op, const Value& l, const Value& r, SourcePos pos) {
  const bool is_float = l.kind() == Kind::kFloat || r.kind() == Kind::kFloat;
  const double a = l.as_number(), b = r.as_number();
  if (op == "/") {
    if (b == 0) return eval_error(pos, "division by zero");
    return Value(a / b);
  }
  if ((op == "//" || op == "%") && b == 0) return eval_error(pos, "division by zero");
  if (!is_float) {
    const int64_t x = l.as_int(), y = r.as_int();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "//") return Value(static_cast<int64_t>(std::floor(static_cast<double>(x) / static_cast<double>(y))));
    if (op == "%") return Value(((x % y) + y) % y);
    if (op == "**" && y >= 0) return Value(static_cast<int64_t>(std::pow(a, b)));
  }
  if (op == "+") return Value(a + b);
  if (op == "-") return Value(a - b);
  if (op == "*") return Value(a * b);
  if (op == "//") return Value(std::floor(a / b));
  if (op == "%") return Value(a - b * std::floor(a / b));
  return Value(std::pow(a, b));
}

Result<Value> Evaluator::eval_binary(const Expr& e, Scope& scope) {
  const std::string& op = e.name;
  PLIMSOLL_ASSIGN(const Value l, eval(*e.a, scope));
  if (op == "and") return l.truthy() ? eval(*e.b, scope) : Result<Value>(l);
  if (op == "or") return l.truthy() ? Result<Value>(l) : eval(*e.b, scope);
  PLIMSOLL_ASSIGN(const Value r, eval(*e.b, scope));
  if (op == "==") return Value(values_equal(l, r));
  if (op == "!=") return Value(!values_equal(l, r));
  if (op == "in" || op == "not in") {
    PLIMSOLL_ASSIGN(const Value found, contains(l, r, e.pos));
    return Value(found.as_bool() == (op == "in"));
  }
  if (op == "~") return Value(l.to_output() + r.to_output());
  if (l.is_undefined() || r.is_undefined()) return eval_error(e.pos, "'" + op + "' on an undefined value");
  if (l.is_none() || r.is_none()) return eval_error(e.pos, "'" + op + "' on none");
  if (op == "<" || op == ">" || op == "<=" || op == ">=") return compare(op, l, r, e.pos);
  if (l.is_number() && r.is_number()) return arithmetic(op, l, r, e.pos);
  if (op == "+" && l.is_array() && r.is_array()) {
    Array joined = l.as_array();
    joined.insert(joined.end(), r.as_array().begin(), r.as_array().end());
    return Value(std::move(joined));
  }
  if (op == "+" && (l.is_string() || r.is_string())) return Value(l.to_output() + r.to_output());
  if (op == "*" && l.is_string() && r.kind() == Kind::kInt) {
    std::string out;
    for (int64_t i = 0; i < r.as_int(); ++i) out += l.as_string();
    return Value(std::move(out));
  }
  return eval_error(e.pos, "cannot apply '" + op + "' to a " + l.type_name() + " and a " + r.type_name());
}

}  // namespace

Result<std::string> render(const Body& body, const Object& context) {
  Scope globals(nullptr);
  for (auto& [name, value] : make_globals().items) globals.set(name, value);
  Scope top(&globals);
  for (const auto& [name, value] : context.items) top.set(name, value);
  Evaluator evaluator;
  std::string out;
  PLIMSOLL_TRY(evaluator.exec(body, top, &out));
  return out;
}

}  // namespace plimsoll::jinja
