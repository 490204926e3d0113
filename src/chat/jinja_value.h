// Jinja runtime values (undefined, none, bool, int, float, string, list, dict,
// namespace, function) with the truthiness, equality and printing rules of @huggingface/jinja.
// Strings, lists and dicts share their payload between copies; payloads built
// while a ByteMeter is active on the thread are counted by it until freed.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_lexer.h"
#include "core/result.h"

namespace plimsoll::jinja {

class Value;
class Budget;
using Array = std::vector<Value>;
struct Object;
struct CallArgs;
// A builtin or macro: positional and keyword arguments in, a value or an error out.
using Function = std::function<Result<Value>(CallArgs& args)>;

// Bytes held by the strings, lists and dicts built while it is active (see
// MeterScope); a payload is counted from construction until its last copy is freed.
class ByteMeter {
 public:
  int64_t held_bytes() const { return held_bytes_; }
  void add(int64_t bytes) { held_bytes_ += bytes; }
  void sub(int64_t bytes) { held_bytes_ -= bytes; }

 private:
  int64_t held_bytes_ = 0;
};

// Makes `meter` this thread's active meter for its lifetime (the render running here).
class MeterScope {
 public:
  explicit MeterScope(ByteMeter* meter);
  ~MeterScope();
  MeterScope(const MeterScope&) = delete;
  MeterScope& operator=(const MeterScope&) = delete;

 private:
  ByteMeter* previous_;
};

// How deep a value may nest (lists and dicts in lists and dicts): deeper ones
// are refused where they would be built, so printing, comparing and freeing
// values recurse at most about twice this far.
constexpr int kMaxValueDepth = 128;

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
  // Keys keep their order; nesting deeper than kMaxValueDepth is an error.
  static Result<Value> from_json(const nlohmann::ordered_json& j, int depth = 0);

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
  const std::string& as_string() const;
  const Array& as_array() const { return *array_; }
  Object& as_object() const { return *object_; }
  const Function& as_function() const { return *function_; }

  // Lists and dicts in lists and dicts: 0 for scalars, 1 + the deepest item for
  // containers, as of construction (a namespace's later attributes are checked when set).
  int depth() const { return depth_; }
  // Whether a namespace is this value or inside it (as of construction).
  bool holds_namespace() const { return holds_namespace_; }

  bool truthy() const;
  // Appends the text {{ }} prints: "" for undefined/none, true/false, JSON for
  // containers. False (and `out` unspecified) where `out` would pass max_bytes.
  bool append_output(std::string* out, size_t max_bytes) const;
  // Appends JSON text as the tojson filter writes it (indent < 0: one line);
  // false where `out` would pass max_bytes.
  bool append_json(std::string* out, int64_t indent, size_t max_bytes) const;
  // Unbounded conveniences for small values (error messages, tests).
  std::string to_output() const;
  std::string to_json(int64_t indent = -1) const;
  const char* type_name() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  int depth_ = 0;
  bool holds_namespace_ = false;
  std::shared_ptr<const std::string> s_;
  std::shared_ptr<const Array> array_;
  std::shared_ptr<Object> object_;
  std::shared_ptr<const Function> function_;
};

// What one list item costs (a list of n items holds n * kItemBytes, its
// strings and containers aside).
inline constexpr int64_t kItemBytes = sizeof(Value);

// An insertion-ordered mapping (dicts keep their key order when printed).
struct Object {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  Budget* budget = nullptr;  // the render's budget (set by the evaluator for every call)
  SourcePos pos;             // where the call is
  // Positional `index`, else keyword `name`, else undefined.
  Value get(size_t index, const std::string& name) const;
};

// == as @huggingface/jinja compares (numbers and booleans by value, none == undefined).
bool values_equal(const Value& a, const Value& b);
// A number as Jinja prints it (floats keep a ".0").
std::string number_text(const Value& number);

}  // namespace plimsoll::jinja
