// Jinja values: construction, conversion from nlohmann::json, truthiness,
// equality, printing ({{ }} and tojson, with @huggingface/jinja's separators).
#include "chat/jinja_value.h"

#include <charconv>
#include <cmath>

namespace plimsoll::jinja {

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value::Value(bool b) : kind_(Kind::kBool), b_(b) {}
Value::Value(int64_t i) : kind_(Kind::kInt), i_(i) {}
Value::Value(double f) : kind_(Kind::kFloat), f_(f) {}
Value::Value(std::string s) : kind_(Kind::kString), s_(std::move(s)) {}
Value::Value(Array a) : kind_(Kind::kArray), array_(std::make_shared<const Array>(std::move(a))) {}

Value Value::object(Object o) {
  Value v;
  v.kind_ = Kind::kObject;
  v.object_ = std::make_shared<Object>(std::move(o));
  return v;
}

Value Value::namespace_object(Object o) {
  Value v = object(std::move(o));
  v.kind_ = Kind::kNamespace;
  return v;
}

Value Value::function(Function f) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.function_ = std::make_shared<const Function>(std::move(f));
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      for (const auto& item : j) a.push_back(from_json(item));
      return Value(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object o;
      for (const auto& [key, item] : j.items()) o.items.emplace_back(key, from_json(item));
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
    case Kind::kString: return !s_.empty();
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

void append_json(const Value& v, int indent, int depth, std::string* out);

void newline(int indent, int depth, std::string* out) {
  if (indent < 0) return;
  *out += '\n';
  out->append(static_cast<size_t>(indent * depth), ' ');
}

void append_array(const Array& items, int indent, int depth, std::string* out) {
  *out += '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) *out += indent < 0 ? ", " : ",";
    newline(indent, depth + 1, out);
    append_json(items[i], indent, depth + 1, out);
  }
  if (!items.empty()) newline(indent, depth, out);
  *out += ']';
}

void append_object(const Object& object, int indent, int depth, std::string* out) {
  *out += '{';
  bool first = true;
  for (const auto& [key, item] : object.items) {
    if (!first) *out += indent < 0 ? ", " : ",";
    first = false;
    newline(indent, depth + 1, out);
    *out += nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    *out += ": ";
    append_json(item, indent, depth + 1, out);
  }
  if (!object.items.empty()) newline(indent, depth, out);
  *out += '}';
}

void append_json(const Value& v, int indent, int depth, std::string* out) {
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: *out += "null"; break;
    case Kind::kBool: *out += v.as_bool() ? "true" : "false"; break;
    case Kind::kInt: *out += number_text(v); break;
    case Kind::kFloat: {  // JSON.stringify: integral floats lose the ".0"
      const std::string text = number_text(v);
      *out += text.ends_with(".0") ? text.substr(0, text.size() - 2) : text;
      break;
    }
    case Kind::kString:
      *out += nlohmann::json(v.as_string()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      break;
    case Kind::kArray: append_array(v.as_array(), indent, depth, out); break;
    case Kind::kObject:
    case Kind::kNamespace: append_object(v.as_object(), indent, depth, out); break;
    case Kind::kFunction: *out += "null"; break;
  }
}

}  // namespace

std::string Value::to_json(int indent) const {
  std::string out;
  append_json(*this, indent, 0, &out);
  return out;
}

std::string Value::to_output() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return "";
    case Kind::kBool: return b_ ? "true" : "false";
    case Kind::kInt:
    case Kind::kFloat: return number_text(*this);
    case Kind::kString: return s_;
    case Kind::kFunction: return "[function]";
    default: return to_json();
  }
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
