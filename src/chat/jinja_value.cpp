// Jinja values: construction, conversion from nlohmann::json, truthiness,
// equality, printing ({{ }} and tojson, with @huggingface/jinja's separators).
#include "chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace plimsoll::jinja {
namespace {

thread_local ByteMeter* t_meter = nullptr;

// A payload counted by the meter active when it was built, until it is freed.
constexpr int64_t kPayloadOverhead = 64;  // shared_ptr control block and header
template <typename T>
struct Counted {
  ByteMeter* meter;
  int64_t bytes;
  void operator()(const T* p) const {
    if (meter != nullptr) meter->sub(bytes);
    delete p;
  }
};
template <typename T>
std::shared_ptr<T> counted(T* payload, int64_t bytes) {
  ByteMeter* meter = t_meter;
  bytes += kPayloadOverhead;
  if (meter != nullptr) meter->add(bytes);
  return std::shared_ptr<T>(payload, Counted<T>{meter, bytes});
}

int64_t string_bytes(const std::string& s) { return static_cast<int64_t>(s.capacity()); }

int64_t object_bytes(const Object& o) {
  int64_t bytes = static_cast<int64_t>(o.items.capacity() * sizeof(o.items[0]));
  for (const auto& [key, value] : o.items) bytes += key.capacity() > 15 ? string_bytes(key) : 0;
  return bytes;
}

const std::string kEmpty;

}  // namespace

MeterScope::MeterScope(ByteMeter* meter) : previous_(t_meter) { t_meter = meter; }
MeterScope::~MeterScope() { t_meter = previous_; }

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value::Value(bool b) : kind_(Kind::kBool), b_(b) {}
Value::Value(int64_t i) : kind_(Kind::kInt), i_(i) {}
Value::Value(double f) : kind_(Kind::kFloat), f_(f) {}
Value::Value(std::string s) : kind_(Kind::kString) {
  const int64_t bytes = string_bytes(s);
  s_ = counted<const std::string>(new std::string(std::move(s)), bytes);
}
Value::Value(Array a) : kind_(Kind::kArray) {
  for (const Value& item : a) {
    depth_ = std::max(depth_, item.depth_ + 1);
    holds_namespace_ = holds_namespace_ || item.holds_namespace_;
  }
  depth_ = std::max(depth_, 1);
  const auto bytes = static_cast<int64_t>(a.capacity()) * kItemBytes;
  array_ = counted<const Array>(new Array(std::move(a)), bytes);
}

Value Value::object(Object o) {
  Value v;
  v.kind_ = Kind::kObject;
  v.depth_ = 1;
  for (const auto& [key, item] : o.items) {
    v.depth_ = std::max(v.depth_, item.depth_ + 1);
    v.holds_namespace_ = v.holds_namespace_ || item.holds_namespace_;
  }
  const int64_t bytes = object_bytes(o);
  v.object_ = counted<Object>(new Object(std::move(o)), bytes);
  return v;
}

Value Value::namespace_object(Object o) {
  Value v = object(std::move(o));
  v.kind_ = Kind::kNamespace;
  v.holds_namespace_ = true;
  return v;
}

Value Value::function(Function f) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.function_ = std::make_shared<const Function>(std::move(f));
  return v;
}

const std::string& Value::as_string() const { return s_ ? *s_ : kEmpty; }

Result<Value> Value::from_json(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxValueDepth) {
    return make_error(ErrorCode::kInvalidArgument,
                      "chat template: a variable nests deeper than " + std::to_string(kMaxValueDepth));
  }
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<uint64_t>();  // above INT64_MAX: a float, as JSON.parse reads it
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      a.reserve(j.size());
      for (const auto& item : j) {
        PLIMSOLL_ASSIGN(Value v, from_json(item, depth + 1));
        a.push_back(std::move(v));
      }
      return Value(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object o;
      o.items.reserve(j.size());
      for (const auto& [key, item] : j.items()) {
        PLIMSOLL_ASSIGN(Value v, from_json(item, depth + 1));
        o.items.emplace_back(key, std::move(v));
      }
      return object(std::move(o));
    }
    default: return Value();
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0;
    case Kind::kString: return !as_string().empty();
    case Kind::kArray: return !array_->empty();
    case Kind::kObject: return !object_->items.empty();
    default: return true;
  }
}

std::string number_text(const Value& number) {
  if (number.kind() == Kind::kInt) return std::to_string(number.as_int());
  const double f = number.as_number();
  if (std::isfinite(f) && f == std::floor(f) && std::fabs(f) < 1e16) {
    return std::to_string(static_cast<int64_t>(f)) + ".0";
  }
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), f);
  return std::string(buffer, result.ptr);
}

namespace {

// Appends to `out` while it stays within max_bytes; `ok` turns false (and
// stays) at the first append that would pass it.
struct BoundedText {
  std::string* out;
  size_t max_bytes;
  bool ok = true;
  bool fits(size_t more) {
    ok = ok && more <= max_bytes && out->size() <= max_bytes - more;
    return ok;
  }
  void put(std::string_view text) {
    if (fits(text.size())) out->append(text);
  }
  void pad(int64_t indent, int depth) {  // newline and indent * depth spaces (indent >= 0)
    int64_t spaces = 0;
    if (__builtin_mul_overflow(indent, static_cast<int64_t>(depth), &spaces) || spaces >= INT64_MAX / 2) {
      ok = false;
      return;
    }
    if (fits(static_cast<size_t>(spaces) + 1)) out->append(1, '\n').append(static_cast<size_t>(spaces), ' ');
  }
};

// What nlohmann's dump(ensure_ascii=false, replace) can write for `s` at most:
// escapes are 2 or 6 bytes, an invalid UTF-8 byte becomes U+FFFD (3 bytes).
size_t json_string_bound(std::string_view s) {
  size_t bound = 2;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      bound += c == '"' || c == '\\' ? 2 : c < 0x20 ? 6 : 1;
      ++i;
      continue;
    }
    const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    size_t k = 1;
    while (n > 0 && k < n && i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80) ++k;
    if (n > 0 && k == n) {
      bound += n;
      i += n;
    } else {
      bound += 3;
      ++i;
    }
  }
  return bound;
}

void put_json_string(const std::string& s, BoundedText& text) {
  if (!text.fits(json_string_bound(s))) return;
  text.out->append(nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void put_json(const Value& v, int64_t indent, int depth, BoundedText& text);

void put_array(const Array& items, int64_t indent, int depth, BoundedText& text) {
  text.put("[");
  for (size_t i = 0; i < items.size() && text.ok; ++i) {
    if (i > 0) text.put(indent < 0 ? ", " : ",");
    if (indent >= 0) text.pad(indent, depth + 1);
    put_json(items[i], indent, depth + 1, text);
  }
  if (!items.empty() && indent >= 0) text.pad(indent, depth);
  text.put("]");
}

void put_object(const Object& object, int64_t indent, int depth, BoundedText& text) {
  text.put("{");
  bool first = true;
  for (const auto& [key, item] : object.items) {
    if (!text.ok) return;
    if (!first) text.put(indent < 0 ? ", " : ",");
    first = false;
    if (indent >= 0) text.pad(indent, depth + 1);
    put_json_string(key, text);
    text.put(": ");
    put_json(item, indent, depth + 1, text);
  }
  if (!object.items.empty() && indent >= 0) text.pad(indent, depth);
  text.put("}");
}

void put_json(const Value& v, int64_t indent, int depth, BoundedText& text) {
  if (depth > 2 * kMaxValueDepth + 8) {  // cannot happen (see kMaxValueDepth); never recurse without bound
    text.ok = false;
    return;
  }
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: text.put("null"); break;
    case Kind::kBool: text.put(v.as_bool() ? "true" : "false"); break;
    case Kind::kInt: text.put(number_text(v)); break;
    case Kind::kFloat: {  // JSON.stringify: integral floats lose the ".0"
      const std::string number = number_text(v);
      text.put(number.ends_with(".0") ? std::string_view(number).substr(0, number.size() - 2) : number);
      break;
    }
    case Kind::kString: put_json_string(v.as_string(), text); break;
    case Kind::kArray: put_array(v.as_array(), indent, depth, text); break;
    case Kind::kObject:
    case Kind::kNamespace: put_object(v.as_object(), indent, depth, text); break;
    case Kind::kFunction: text.put("null"); break;
  }
}

}  // namespace

bool Value::append_json(std::string* out, int64_t indent, size_t max_bytes) const {
  BoundedText text{out, max_bytes};
  put_json(*this, indent, 0, text);
  return text.ok;
}

bool Value::append_output(std::string* out, size_t max_bytes) const {
  BoundedText text{out, max_bytes};
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: break;
    case Kind::kBool: text.put(b_ ? "true" : "false"); break;
    case Kind::kInt:
    case Kind::kFloat: text.put(number_text(*this)); break;
    case Kind::kString: text.put(as_string()); break;
    case Kind::kFunction: text.put("[function]"); break;
    default: put_json(*this, -1, 0, text);
  }
  return text.ok;
}

std::string Value::to_json(int64_t indent) const {
  std::string out;
  append_json(&out, indent, SIZE_MAX);
  return out;
}

std::string Value::to_output() const {
  std::string out;
  append_output(&out, SIZE_MAX);
  return out;
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNone: return "none";
    case Kind::kBool: return "boolean";
    case Kind::kInt: return "integer";
    case Kind::kFloat: return "float";
    case Kind::kString: return "string";
    case Kind::kArray: return "list";
    case Kind::kObject: return "dict";
    case Kind::kNamespace: return "namespace";
    case Kind::kFunction: return "function";
  }
  return "?";
}

const Value* Object::find(const std::string& key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Object::set(const std::string& key, Value value) {
  for (auto& [k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

Value CallArgs::get(size_t index, const std::string& name) const {
  if (index < positional.size()) return positional[index];
  for (const auto& [k, v] : keyword) {
    if (k == name) return v;
  }
  return Value();
}

bool values_equal(const Value& a, const Value& b) {
  const bool a_null = a.is_undefined() || a.is_none();
  const bool b_null = b.is_undefined() || b.is_none();
  if (a_null || b_null) return a_null && b_null;
  const auto numeric = [](const Value& v) { return v.is_number() || v.kind() == Kind::kBool; };
  if (a.kind() == Kind::kInt && b.kind() == Kind::kInt) return a.as_int() == b.as_int();
  if (numeric(a) && numeric(b)) {
    const auto as_double = [](const Value& v) {
      return v.kind() == Kind::kBool ? (v.as_bool() ? 1.0 : 0.0) : v.as_number();
    };
    return as_double(a) == as_double(b);
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kString: return a.as_string() == b.as_string();
    case Kind::kArray: {
      const Array& x = a.as_array();
      const Array& y = b.as_array();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!values_equal(x[i], y[i])) return false;
      }
      return true;
    }
    case Kind::kObject:
    case Kind::kNamespace: return &a.as_object() == &b.as_object();
    default: return false;
  }
}

}  // namespace plimsoll::jinja
