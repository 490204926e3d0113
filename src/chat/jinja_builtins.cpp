// Builtin filters, tests, methods and globals, following @huggingface/jinja's
// behavior for the subset chat templates use.
#include "chat/jinja_builtins.h"

#include <algorithm>
#include <cctype>
#include <ctime>

namespace plimsoll::jinja {

Error eval_error(SourcePos pos, const std::string& problem) {
  return make_error(ErrorCode::kInvalidArgument, "chat template " + pos.text() + ": " + problem);
}

Error unsupported_error(SourcePos pos, const std::string& what) {
  return make_error(ErrorCode::kUnsupported, "chat template " + pos.text() + ": " + what + " is not supported");
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string strip(std::string_view s, bool left, bool right, std::string_view chars = {}) {
  const auto strip_char = [&](char c) { return chars.empty() ? is_space(c) : chars.find(c) != std::string_view::npos; };
  size_t begin = 0, end = s.size();
  while (left && begin < end && strip_char(s[begin])) ++begin;
  while (right && end > begin && strip_char(s[end - 1])) --end;
  return std::string(s.substr(begin, end - begin));
}

std::string map_ascii(std::string s, int (*f)(int)) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x80) c = static_cast<char>(f(static_cast<unsigned char>(c)));
  }
  return s;
}

std::string capitalize(const std::string& s) {
  std::string out = map_ascii(s, [](int c) { return std::tolower(c); });
  if (!out.empty() && static_cast<unsigned char>(out[0]) < 0x80) out[0] = static_cast<char>(std::toupper(out[0]));
  return out;
}

std::string title(const std::string& s) {
  std::string out = s;
  bool start = true;
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) {
      start = false;
      continue;
    }
    c = static_cast<char>(start ? std::toupper(u) : std::tolower(u));
    start = !std::isalnum(u);
  }
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) return s;
  std::string out;
  size_t pos = 0;
  for (size_t hit = s.find(from); hit != std::string::npos && count != 0; hit = s.find(from, pos), --count) {
    out.append(s, pos, hit - pos).append(to);
    pos = hit + from.size();
  }
  out.append(s, pos);
  return out;
}

Array split(const std::string& s, const Value& sep) {
  Array parts;
  if (!sep.is_string()) {  // Python: runs of whitespace, no empty parts
    std::string current;
    for (const char c : s) {
      if (is_space(c)) {
        if (!current.empty()) parts.emplace_back(std::move(current));
        current.clear();
      } else {
        current += c;
      }
    }
    if (!current.empty()) parts.emplace_back(std::move(current));
    return parts;
  }
  const std::string& d = sep.as_string();
  size_t pos = 0;
  for (size_t hit = s.find(d); hit != std::string::npos && !d.empty(); hit = s.find(d, pos)) {
    parts.emplace_back(s.substr(pos, hit - pos));
    pos = hit + d.size();
  }
  parts.emplace_back(s.substr(pos));
  return parts;
}

int64_t length_of(const Value& v) {
  if (v.is_string()) {  // characters, not bytes
    return std::count_if(v.as_string().begin(), v.as_string().end(),
                         [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
  }
  if (v.is_array()) return static_cast<int64_t>(v.as_array().size());
  if (v.is_object_like()) return static_cast<int64_t>(v.as_object().items.size());
  return 0;
}

Value items_of(const Value& v) {
  Array items;
  for (const auto& [key, value] : v.as_object().items) items.emplace_back(Array{Value(key), value});
  return Value(std::move(items));
}

Result<Value> string_filter(const std::string& name, const Value& operand, CallArgs& args, SourcePos pos) {
  const std::string& s = operand.as_string();
  if (name == "trim") return Value(strip(s, true, true));
  if (name == "upper") return Value(map_ascii(s, [](int c) { return std::toupper(c); }));
  if (name == "lower") return Value(map_ascii(s, [](int c) { return std::tolower(c); }));
  if (name == "capitalize") return Value(capitalize(s));
  if (name == "title") return Value(title(s));
  if (name == "replace") {
    const Value from = args.get(0, "old"), to = args.get(1, "new"), count = args.get(2, "count");
    if (!from.is_string() || !to.is_string()) return eval_error(pos, "replace expects two strings");
    return Value(replace_all(s, from.as_string(), to.as_string(), count.kind() == Kind::kInt ? count.as_int() : -1));
  }
  return unsupported_error(pos, "filter '" + name + "' on a string");
}

Result<Value> array_filter(const std::string& name, const Value& operand, CallArgs& args, SourcePos pos) {
  const Array& a = operand.as_array();
  if (name == "first") return a.empty() ? Value() : a.front();
  if (name == "last") return a.empty() ? Value() : a.back();
  if (name == "list") return operand;
  if (name == "reverse") return Value(Array(a.rbegin(), a.rend()));
  if (name == "join") {
    const Value sep = args.get(0, "d");
    std::string out;
    for (size_t i = 0; i < a.size(); ++i) {
      if (i > 0 && sep.is_string()) out += sep.as_string();
      out += a[i].to_output();
    }
    return Value(std::move(out));
  }
  return unsupported_error(pos, "filter '" + name + "' on a list");
}

}  // namespace

Result<Value> apply_filter(const std::string& name, const Value& operand, CallArgs& args, SourcePos pos) {
  if (name == "default" || name == "d") {
    const bool use_default = operand.is_undefined() || (args.get(1, "boolean").truthy() && !operand.truthy());
    return use_default ? (args.get(0, "default_value").is_undefined() ? Value("") : args.get(0, "default_value"))
                       : operand;
  }
  if (name == "tojson") {
    const Value indent = args.get(0, "indent");
    return Value(operand.to_json(indent.kind() == Kind::kInt ? static_cast<int>(indent.as_int()) : -1));
  }
  if (name == "string") return operand.is_string() ? operand : Value(operand.to_output());
  if (name == "safe") return operand;
  if (name == "length" || name == "count") {
    if (!operand.is_string() && !operand.is_array() && !operand.is_object_like()) {
      return eval_error(pos, std::string("length of a ") + operand.type_name());
    }
    return Value(length_of(operand));
  }
  if (name == "items") {
    if (!operand.is_mapping()) return eval_error(pos, std::string("items of a ") + operand.type_name());
    return items_of(operand);
  }
  if (name == "int" && (operand.is_number() || operand.kind() == Kind::kBool)) {
    return Value(static_cast<int64_t>(operand.kind() == Kind::kBool ? operand.as_bool() : operand.as_number()));
  }
  if (operand.is_string()) return string_filter(name, operand, args, pos);
  if (operand.is_array()) return array_filter(name, operand, args, pos);
  if (operand.is_undefined()) return eval_error(pos, "filter '" + name + "' applied to an undefined value");
  return unsupported_error(pos, "filter '" + name + "' on a " + operand.type_name());
}

Result<bool> apply_test(const std::string& name, const Value& v, CallArgs& args, SourcePos pos) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind() == Kind::kInt;
  if (name == "float") return v.kind() == Kind::kFloat;
  if (name == "boolean") return v.kind() == Kind::kBool;
  if (name == "true") return v.kind() == Kind::kBool && v.as_bool();
  if (name == "false") return v.kind() == Kind::kBool && !v.as_bool();
  if (name == "mapping") return v.is_mapping();
  if (name == "iterable" || name == "sequence") return v.is_array() || v.is_string() || v.is_mapping();
  if (name == "callable") return v.kind() == Kind::kFunction;
  if (name == "odd" || name == "even") {
    if (v.kind() != Kind::kInt) return eval_error(pos, "test '" + name + "' needs an integer");
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "eq" || name == "equalto" || name == "==") return values_equal(v, args.get(0, "other"));
  if (name == "ne" || name == "!=") return !values_equal(v, args.get(0, "other"));
  return unsupported_error(pos, "test '" + name + "'");
}

namespace {

Value string_method(const std::string& s, const std::string& name) {
  auto fn = [](auto body) { return Value::function(std::move(body)); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool left = name != "rstrip", right = name != "lstrip";
    return fn([s, left, right](CallArgs& a) -> Result<Value> {
      const Value chars = a.get(0, "chars");
      return Value(strip(s, left, right, chars.is_string() ? std::string_view(chars.as_string()) : std::string_view()));
    });
  }
  if (name == "upper") return fn([s](CallArgs&) -> Result<Value> { return Value(map_ascii(s, [](int c) { return std::toupper(c); })); });
  if (name == "lower") return fn([s](CallArgs&) -> Result<Value> { return Value(map_ascii(s, [](int c) { return std::tolower(c); })); });
  if (name == "title") return fn([s](CallArgs&) -> Result<Value> { return Value(title(s)); });
  if (name == "capitalize") return fn([s](CallArgs&) -> Result<Value> { return Value(capitalize(s)); });
  if (name == "startswith" || name == "endswith") {
    const bool starts = name == "startswith";
    return fn([s, starts](CallArgs& a) -> Result<Value> {
      const Value p = a.get(0, "prefix");
      if (!p.is_string()) return Value(false);
      return Value(starts ? s.starts_with(p.as_string()) : s.ends_with(p.as_string()));
    });
  }
  if (name == "split") return fn([s](CallArgs& a) -> Result<Value> { return Value(split(s, a.get(0, "sep"))); });
  if (name == "replace") {
    return fn([s](CallArgs& a) -> Result<Value> {
      const Value from = a.get(0, "old"), to = a.get(1, "new"), count = a.get(2, "count");
      if (!from.is_string() || !to.is_string()) return Value(s);
      return Value(replace_all(s, from.as_string(), to.as_string(), count.kind() == Kind::kInt ? count.as_int() : -1));
    });
  }
  return Value();
}

Value dict_method(const Value& object, const std::string& name) {
  if (name == "items") return Value::function([object](CallArgs&) -> Result<Value> { return items_of(object); });
  if (name == "keys" || name == "values") {
    const bool keys = name == "keys";
    return Value::function([object, keys](CallArgs&) -> Result<Value> {
      Array out;
      for (const auto& [k, v] : object.as_object().items) out.push_back(keys ? Value(k) : v);
      return Value(std::move(out));
    });
  }
  if (name == "get") {
    return Value::function([object](CallArgs& a) -> Result<Value> {
      const Value key = a.get(0, "key");
      const Value* found = key.is_string() ? object.as_object().find(key.as_string()) : nullptr;
      if (found != nullptr) return *found;
      const Value fallback = a.get(1, "default");
      return fallback.is_undefined() ? Value::none() : fallback;
    });
  }
  return Value();
}

std::string format_now(const std::string& format) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[256];
  const size_t n = std::strftime(buffer, sizeof(buffer), format.c_str(), &local);
  return std::string(buffer, n);
}

Result<Value> range_function(CallArgs& a) {
  int64_t start = 0, stop = 0, step = 1;
  const size_t n = a.positional.size();
  for (const Value& v : a.positional) {
    if (v.kind() != Kind::kInt) return make_error(ErrorCode::kInvalidArgument, "chat template: range() needs integers");
  }
  if (n == 1) stop = a.positional[0].as_int();
  if (n >= 2) start = a.positional[0].as_int(), stop = a.positional[1].as_int();
  if (n == 3) step = a.positional[2].as_int();
  if (n == 0 || n > 3 || step == 0) return make_error(ErrorCode::kInvalidArgument, "chat template: bad range() arguments");
  Array out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    out.emplace_back(i);
    if (out.size() > 1000000) return make_error(ErrorCode::kInvalidArgument, "chat template: range() too long");
  }
  return Value(std::move(out));
}

}  // namespace

Value bound_method(const Value& object, const std::string& name, SourcePos) {
  if (object.is_string()) return string_method(object.as_string(), name);
  if (object.is_mapping()) return dict_method(object, name);
  return Value();
}

Object make_globals() {
  Object g;
  g.set("range", Value::function(range_function));
  g.set("namespace", Value::function([](CallArgs& a) -> Result<Value> {
    Object o;
    if (!a.positional.empty() && a.positional[0].is_mapping()) o = a.positional[0].as_object();
    for (auto& [k, v] : a.keyword) o.set(k, v);
    return Value::namespace_object(std::move(o));
  }));
  g.set("dict", Value::function([](CallArgs& a) -> Result<Value> {
    Object o;
    for (auto& [k, v] : a.keyword) o.set(k, v);
    return Value::object(std::move(o));
  }));
  g.set("raise_exception", Value::function([](CallArgs& a) -> Result<Value> {
    return make_error(ErrorCode::kInvalidArgument, "chat template raised: " + a.get(0, "message").to_output());
  }));
  g.set("strftime_now", Value::function([](CallArgs& a) -> Result<Value> {
    const Value format = a.get(0, "format");
    return Value(format_now(format.is_string() ? format.as_string() : "%Y-%m-%d"));
  }));
  return g;
}

}  // namespace plimsoll::jinja
