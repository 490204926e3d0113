// Builtin filters, tests, methods and globals, following @huggingface/jinja's
// behavior for the subset chat templates use.
#include "chat/jinja_builtins.h"

#include <algorithm>
#include <cctype>
#include <ctime>

#include "chat/jinja_budget.h"
#include "chat/jinja_math.h"

namespace plimsoll::jinja {

Error eval_error(SourcePos pos, const std::string& problem) {
  return make_error(ErrorCode::kInvalidArgument, "chat template " + pos.text() + ": " + problem);
}

Error unsupported_error(SourcePos pos, const std::string& what) {
  return make_error(ErrorCode::kUnsupported, "chat template " + pos.text() + ": " + what + " is not supported");
}

namespace {

// Python's str.isspace(), which str.strip() and str.split() use (and so
// transformers' jinja2 `trim`): ASCII whitespace, the separators 0x1C-0x1F,
// U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// The character at `pos`: its code point and length in bytes; a byte that
// starts no well-formed character is itself (length 1, never a space).
struct Char {
  char32_t code = 0;
  size_t length_bytes = 1;
};
Char char_at(std::string_view s, size_t pos) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = b(pos);
  const size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (n <= 1 || pos + n > s.size()) return {lead, 1};
  char32_t code = lead & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) {
    if ((b(pos + i) & 0xC0) != 0x80) return {0xFFFD, 1};
    code = (code << 6) | (b(pos + i) & 0x3F);
  }
  return {code, n};
}

// The start of the character that ends at `end` (> begin).
size_t char_before(std::string_view s, size_t begin, size_t end) {
  size_t p = end - 1;
  while (p > begin && end - p < 4 && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) --p;
  return char_at(s, p).length_bytes == end - p ? p : end - 1;
}

bool is_space_at(std::string_view s, size_t pos) { return is_python_space(char_at(s, pos).code); }

// Python's str.strip / lstrip / rstrip: whitespace (is_python_space), or the
// characters (code points) of `chars`.
std::string strip(std::string_view s, bool left, bool right, std::string_view chars = {}) {
  std::u32string set;
  for (size_t i = 0; i < chars.size(); i += char_at(chars, i).length_bytes) set.push_back(char_at(chars, i).code);
  const auto strip_char = [&](char32_t c) {
    return chars.empty() ? is_python_space(c) : set.find(c) != std::u32string::npos;
  };
  size_t begin = 0, end = s.size();
  while (left && begin < end && strip_char(char_at(s, begin).code)) begin += char_at(s, begin).length_bytes;
  while (right && end > begin) {
    const size_t last = char_before(s, begin, end);
    if (!strip_char(char_at(s, last).code)) break;
    end = last;
  }
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

// s with `from` replaced by `to` (at most `count` times; count < 0: all),
// its size checked against the budget before it is built.
Result<Value> replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count,
                          Budget& budget, SourcePos pos) {
  if (from.empty()) return Value(s);
  PLIMSOLL_TRY(budget.step(pos, static_cast<int64_t>(s.size())));
  int64_t hits = 0;
  for (size_t hit = s.find(from); hit != std::string::npos && hits != count; hit = s.find(from, hit + from.size())) {
    ++hits;
  }
  // hits * |from| <= |s|, so only the added bytes can overflow.
  int64_t added = 0, bytes = 0;
  if (__builtin_mul_overflow(hits, static_cast<int64_t>(to.size()), &added) ||
      __builtin_add_overflow(static_cast<int64_t>(s.size()) - hits * static_cast<int64_t>(from.size()), added,
                             &bytes)) {
    bytes = INT64_MAX;
  }
  PLIMSOLL_TRY(budget.reserve(bytes, pos, "replace"));
  std::string out;
  out.reserve(static_cast<size_t>(bytes));
  size_t pos_in = 0;
  for (int64_t k = 0; k < hits; ++k) {
    const size_t hit = s.find(from, pos_in);
    out.append(s, pos_in, hit - pos_in).append(to);
    pos_in = hit + from.size();
  }
  out.append(s, pos_in);
  return Value(std::move(out));
}

// Python's str.split: by `sep`, or (sep not a string) by runs of whitespace
// with no empty parts; the parts are counted and budgeted before they are built.
Result<Value> split(const std::string& s, const Value& sep, Budget& budget, SourcePos pos) {
  PLIMSOLL_TRY(budget.step(pos, static_cast<int64_t>(s.size())));
  std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) of each part
  if (!sep.is_string()) {
    for (size_t i = 0; i < s.size();) {
      while (i < s.size() && is_space_at(s, i)) i += char_at(s, i).length_bytes;
      const size_t begin = i;
      while (i < s.size() && !is_space_at(s, i)) i += char_at(s, i).length_bytes;
      if (i > begin) spans.emplace_back(begin, i);
    }
  } else {
    const std::string& d = sep.as_string();
    size_t begin = 0;
    for (size_t hit = s.find(d); hit != std::string::npos && !d.empty(); hit = s.find(d, begin)) {
      spans.emplace_back(begin, hit);
      begin = hit + d.size();
    }
    spans.emplace_back(begin, s.size());
  }
  // Each part: a list item and a string of its own (with its bytes).
  PLIMSOLL_TRY(budget.reserve(static_cast<int64_t>(spans.size()) * 2 * kItemBytes + static_cast<int64_t>(s.size()),
                              pos, "split"));
  Array parts;
  parts.reserve(spans.size());
  for (const auto& [begin, end] : spans) parts.emplace_back(s.substr(begin, end - begin));
  return Value(std::move(parts));
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

// [[key, value], ...]: per entry an item, a pair list and the key's string.
Result<Value> items_of(const Value& v, Budget& budget, SourcePos pos) {
  const auto& entries = v.as_object().items;
  int64_t bytes = 0;
  for (const auto& [key, value] : entries) bytes += 5 * kItemBytes + static_cast<int64_t>(key.size());
  PLIMSOLL_TRY(budget.reserve(bytes, pos, "items"));
  Array items;
  items.reserve(entries.size());
  for (const auto& [key, value] : entries) items.emplace_back(Array{Value(key), value});
  return Value(std::move(items));
}

// A copy of `s` changed in place by `change`, budgeted first.
Result<Value> mapped(const std::string& s, Budget& budget, SourcePos pos, const char* what,
                     std::string (*change)(std::string)) {
  PLIMSOLL_TRY(budget.reserve(static_cast<int64_t>(s.size()), pos, what));
  return Value(change(s));
}

std::string to_upper(std::string s) { return map_ascii(std::move(s), [](int c) { return std::toupper(c); }); }
std::string to_lower(std::string s) { return map_ascii(std::move(s), [](int c) { return std::tolower(c); }); }
std::string to_capitalized(std::string s) { return capitalize(s); }
std::string to_title(std::string s) { return title(s); }

// Text as {{ }} prints `v`, within the budget.
Result<Value> output_text(const Value& v, Budget& budget, SourcePos pos, const char* what) {
  if (v.is_string()) return v;
  std::string text;
  const int64_t room = budget.room_bytes();
  if (!v.append_output(&text, static_cast<size_t>(room))) return budget.held_error(room + 1, pos, what);
  PLIMSOLL_TRY(budget.step(pos, static_cast<int64_t>(text.size())));
  return Value(std::move(text));
}

Result<Value> string_filter(const std::string& name, const Value& operand, CallArgs& args, SourcePos pos) {
  const std::string& s = operand.as_string();
  Budget& budget = *args.budget;
  if (name == "trim") return mapped(s, budget, pos, "trim", [](std::string t) { return strip(t, true, true); });
  if (name == "upper") return mapped(s, budget, pos, "upper", to_upper);
  if (name == "lower") return mapped(s, budget, pos, "lower", to_lower);
  if (name == "capitalize") return mapped(s, budget, pos, "capitalize", to_capitalized);
  if (name == "title") return mapped(s, budget, pos, "title", to_title);
  if (name == "replace") {
    const Value from = args.get(0, "old"), to = args.get(1, "new"), count = args.get(2, "count");
    if (!from.is_string() || !to.is_string()) return eval_error(pos, "replace expects two strings");
    return replace_all(s, from.as_string(), to.as_string(), count.kind() == Kind::kInt ? count.as_int() : -1, budget,
                       pos);
  }
  return unsupported_error(pos, "filter '" + name + "' on a string");
}

// selectattr / rejectattr: the items whose attribute passes the named test
// (more positional arguments are the test's), or is truthy without one.
Result<Value> select_by_attribute(const std::string& name, const Array& a, CallArgs& args, SourcePos pos) {
  const Value attribute = args.get(0, "attribute");
  if (!attribute.is_string()) return eval_error(pos, name + " expects an attribute name");
  const Value test = args.get(1, "test");
  CallArgs test_args;
  test_args.budget = args.budget;
  test_args.pos = pos;
  for (size_t i = 2; i < args.positional.size(); ++i) test_args.positional.push_back(args.positional[i]);
  PLIMSOLL_TRY(args.budget->reserve(static_cast<int64_t>(a.size()) * kItemBytes, pos, "selectattr"));
  Array out;
  for (const Value& item : a) {
    PLIMSOLL_TRY(args.budget->step(pos));
    Value field;
    if (item.is_object_like()) {
      if (const Value* v = item.as_object().find(attribute.as_string())) field = *v;
    }
    bool pass = field.truthy();
    if (test.is_string()) {
      PLIMSOLL_ASSIGN(pass, apply_test(test.as_string(), field, test_args, pos));
    }
    if (pass == (name == "selectattr")) out.push_back(item);
  }
  return Value(std::move(out));
}

Result<Value> array_filter(const std::string& name, const Value& operand, CallArgs& args, SourcePos pos) {
  const Array& a = operand.as_array();
  Budget& budget = *args.budget;
  if (name == "first") return a.empty() ? Value() : a.front();
  if (name == "last") return a.empty() ? Value() : a.back();
  if (name == "list") return operand;
  if (name == "reverse") {
    PLIMSOLL_TRY(budget.reserve(static_cast<int64_t>(a.size()) * kItemBytes, pos, "reverse"));
    return Value(Array(a.rbegin(), a.rend()));
  }
  if (name == "selectattr" || name == "rejectattr") return select_by_attribute(name, a, args, pos);
  if (name == "join") {
    const Value sep = args.get(0, "d");
    const int64_t room = budget.room_bytes();
    const auto max_bytes = static_cast<size_t>(room);
    std::string out;
    for (size_t i = 0; i < a.size(); ++i) {
      const bool fits = (i == 0 || !sep.is_string() || sep.append_output(&out, max_bytes)) &&
                        a[i].append_output(&out, max_bytes);
      if (!fits) return budget.held_error(room + 1, pos, "join");
    }
    PLIMSOLL_TRY(budget.step(pos, static_cast<int64_t>(out.size())));
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
    const int64_t room = args.budget->room_bytes();
    std::string text;
    if (!operand.append_json(&text, indent.kind() == Kind::kInt ? indent.as_int() : -1, static_cast<size_t>(room))) {
      return args.budget->held_error(room + 1, pos, "tojson");
    }
    PLIMSOLL_TRY(args.budget->step(pos, static_cast<int64_t>(text.size())));
    return Value(std::move(text));
  }
  if (name == "string") return output_text(operand, *args.budget, pos, "string");
  if (name == "safe") return operand;
  if (name == "length" || name == "count") {
    if (!operand.is_string() && !operand.is_array() && !operand.is_object_like()) {
      return eval_error(pos, std::string("length of a ") + operand.type_name());
    }
    if (operand.is_string()) PLIMSOLL_TRY(args.budget->step(pos, static_cast<int64_t>(operand.as_string().size())));
    return Value(length_of(operand));
  }
  if (name == "items") {
    if (!operand.is_mapping()) return eval_error(pos, std::string("items of a ") + operand.type_name());
    return items_of(operand, *args.budget, pos);
  }
  if (name == "int" && (operand.is_number() || operand.kind() == Kind::kBool)) {
    if (operand.kind() == Kind::kBool) return Value(int64_t{operand.as_bool() ? 1 : 0});
    if (operand.kind() == Kind::kInt) return operand;
    PLIMSOLL_ASSIGN(const int64_t truncated, checked_float_to_int(operand.as_number(), pos));
    return Value(truncated);
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

Value string_method(const Value& text, const std::string& name) {
  auto fn = [](auto body) { return Value::function(std::move(body)); };
  // Each method keeps `text` (shared, not copied) and reads it when called.
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool left = name != "rstrip", right = name != "lstrip";
    return fn([text, left, right](CallArgs& a) -> Result<Value> {
      const Value chars = a.get(0, "chars");
      const std::string& s = text.as_string();
      PLIMSOLL_TRY(a.budget->reserve(static_cast<int64_t>(s.size()), a.pos, "strip"));
      return Value(strip(s, left, right, chars.is_string() ? std::string_view(chars.as_string()) : std::string_view()));
    });
  }
  using Change = std::string (*)(std::string);
  const Change change = name == "upper" ? to_upper : name == "lower" ? to_lower : name == "title" ? to_title
                        : name == "capitalize" ? to_capitalized : nullptr;
  if (change != nullptr) {
    return fn([text, change](CallArgs& a) -> Result<Value> {
      return mapped(text.as_string(), *a.budget, a.pos, "a string method", change);
    });
  }
  if (name == "startswith" || name == "endswith") {
    const bool starts = name == "startswith";
    return fn([text, starts](CallArgs& a) -> Result<Value> {
      const Value p = a.get(0, "prefix");
      if (!p.is_string()) return Value(false);
      const std::string& s = text.as_string();
      return Value(starts ? s.starts_with(p.as_string()) : s.ends_with(p.as_string()));
    });
  }
  if (name == "split") {
    return fn([text](CallArgs& a) -> Result<Value> { return split(text.as_string(), a.get(0, "sep"), *a.budget, a.pos); });
  }
  if (name == "replace") {
    return fn([text](CallArgs& a) -> Result<Value> {
      const Value from = a.get(0, "old"), to = a.get(1, "new"), count = a.get(2, "count");
      if (!from.is_string() || !to.is_string()) return text;
      return replace_all(text.as_string(), from.as_string(), to.as_string(),
                         count.kind() == Kind::kInt ? count.as_int() : -1, *a.budget, a.pos);
    });
  }
  return Value();
}

Value dict_method(const Value& object, const std::string& name) {
  if (name == "items") {
    return Value::function([object](CallArgs& a) -> Result<Value> { return items_of(object, *a.budget, a.pos); });
  }
  if (name == "keys" || name == "values") {
    const bool keys = name == "keys";
    return Value::function([object, keys](CallArgs& a) -> Result<Value> {
      const auto& entries = object.as_object().items;
      int64_t bytes = static_cast<int64_t>(entries.size()) * kItemBytes;
      for (const auto& [k, v] : entries) bytes += keys ? kItemBytes + static_cast<int64_t>(k.size()) : 0;
      PLIMSOLL_TRY(a.budget->reserve(bytes, a.pos, keys ? "keys" : "values"));
      Array out;
      out.reserve(entries.size());
      for (const auto& [k, v] : entries) out.push_back(keys ? Value(k) : v);
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

// range(stop), range(start, stop[, step]): its length is computed without
// overflow and budgeted before the list is built.
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
  const __int128 distance = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  const __int128 stride = step > 0 ? static_cast<__int128>(step) : -static_cast<__int128>(step);
  const __int128 count = distance <= 0 ? 0 : (distance - 1) / stride + 1;  // <= 2^64
  const __int128 bytes = count * kItemBytes;
  PLIMSOLL_TRY(a.budget->reserve(bytes > INT64_MAX ? INT64_MAX : static_cast<int64_t>(bytes), a.pos,
                                 "range() of " + std::to_string(static_cast<uint64_t>(count)) + " items"));
  Array out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t k = 0; k < static_cast<int64_t>(count); ++k) {
    out.emplace_back(static_cast<int64_t>(start + static_cast<__int128>(k) * step));  // within [start, stop)
  }
  return Value(std::move(out));
}

}  // namespace

Value bound_method(const Value& object, const std::string& name, SourcePos) {
  if (object.is_string()) return string_method(object, name);
  if (object.is_mapping()) return dict_method(object, name);
  return Value();
}

Object make_globals() {
  Object g;
  g.set("range", Value::function(range_function));
  g.set("namespace", Value::function([](CallArgs& a) -> Result<Value> {
    Object o;
    if (!a.positional.empty() && a.positional[0].is_mapping()) {
      const Object& from = a.positional[0].as_object();
      PLIMSOLL_TRY(a.budget->reserve(static_cast<int64_t>(from.items.size() * sizeof(from.items[0])), a.pos,
                                     "namespace()"));
      o = from;
    }
    for (auto& [k, v] : a.keyword) o.set(k, v);
    return Value::namespace_object(std::move(o));
  }));
  g.set("dict", Value::function([](CallArgs& a) -> Result<Value> {
    Object o;
    for (auto& [k, v] : a.keyword) o.set(k, v);
    return Value::object(std::move(o));
  }));
  g.set("raise_exception", Value::function([](CallArgs& a) -> Result<Value> {
    const Value m = a.get(0, "message");  // at most 4 KiB of it
    std::string message = m.is_string() ? m.as_string().substr(0, 4096) : "";
    if (!m.is_string() && !m.append_output(&message, 4096)) message += "...";
    return make_error(ErrorCode::kInvalidArgument, "chat template raised: " + message);
  }));
  g.set("strftime_now", Value::function([](CallArgs& a) -> Result<Value> {
    const Value format = a.get(0, "format");
    return Value(format_now(format.is_string() ? format.as_string() : "%Y-%m-%d"));
  }));
  return g;
}

}  // namespace plimsoll::jinja
