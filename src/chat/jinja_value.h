// Jinja runtime values (undefined, none, bool, int, float, string, list, dict,
// namespace, function) with the truthiness, equality and printing rules of @huggingface/jinja.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace plimsoll::jinja {

class Value;
using Array = std::vector<Value>;
struct Object;
struct CallArgs;
// A builtin or macro: positional and keyword arguments in, a value or an error out.
using Function = std::function<Result<Value>(CallArgs& args)>;

enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kNamespace, kFunction };

class Value {
 public:
  Value() = default;  // undefined
  static Value none();
  Value(bool b);                  // NOLINT: implicit by design
  Value(int64_t i);               // NOLINT
  Value(int i) : Value(static_cast<int64_t>(i)) {}  // NOLINT
  Value(double f);                // NOLINT
  Value(std::string s);           // NOLINT
  Value(const char* s) : Value(std::string(s)) {}  // NOLINT
  Value(Array a);                 // NOLINT
  static Value object(Object o);
  static Value namespace_object(Object o);
  static Value function(Function f);
  static Value from_json(const nlohmann::ordered_json& j);  // keys keep their order

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_mapping() const { return kind_ == Kind::kObject; }
  bool is_object_like() const { return kind_ == Kind::kObject || kind_ == Kind::kNamespace; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  double as_number() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(i_); }
  const std::string& as_string() const { return s_; }
  const Array& as_array() const { return *array_; }
  Object& as_object() const { return *object_; }
  const Function& as_function() const { return *function_; }

  bool truthy() const;
  // Text as {{ }} prints it: "" for undefined/none, true/false, JSON for containers.
  std::string to_output() const;
  // JSON text as the tojson filter writes it (indent < 0: one line).
  std::string to_json(int indent = -1) const;
  const char* type_name() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<const Array> array_;
  std::shared_ptr<Object> object_;
  std::shared_ptr<const Function> function_;
};

// An insertion-ordered mapping (dicts keep their key order when printed).
struct Object {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // Positional `index`, else keyword `name`, else undefined.
  Value get(size_t index, const std::string& name) const;
};

// == as @huggingface/jinja compares (numbers and booleans by value, none == undefined).
bool values_equal(const Value& a, const Value& b);
// A number as Jinja prints it (floats keep a ".0").
std::string number_text(const Value& number);

}  // namespace plimsoll::jinja
