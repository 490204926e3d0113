// Typed reads of request fields; every type mismatch becomes a validation
// error naming the field, the expected type and the given one.
#include "api/field_reader.h"

namespace plimsoll::api {

const char* json_type_name(const json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "boolean";
  if (value.is_number_integer() || value.is_number_unsigned()) return "integer";
  if (value.is_number()) return "number";
  if (value.is_string()) return "string";
  if (value.is_array()) return "array";
  return "object";
}

const json* FieldReader::raw(const char* key) const {
  if (!object_->is_object()) return nullptr;
  auto it = object_->find(key);
  if (it == object_->end() || it->is_null()) return nullptr;
  return &*it;
}

Error FieldReader::type_error(const char* key, const char* expected) const {
  return make_error(ErrorCode::kInvalidArgument, std::string("`") + key + "` must be " + expected +
                                                     ", got " + json_type_name(*raw(key)));
}

Result<std::optional<double>> FieldReader::number(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::optional<double>();
  if (!v->is_number()) return type_error(key, "a number");
  return std::optional<double>(v->get<double>());
}

Result<std::optional<int64_t>> FieldReader::integer(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::optional<int64_t>();
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return type_error(key, "an integer below 2^63");
    return std::optional<int64_t>(static_cast<int64_t>(u));
  }
  if (!v->is_number_integer()) return type_error(key, "an integer");
  return std::optional<int64_t>(v->get<int64_t>());
}

Result<std::optional<uint64_t>> FieldReader::unsigned_integer(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::optional<uint64_t>();
  if (v->is_number_unsigned()) return std::optional<uint64_t>(v->get<uint64_t>());
  if (v->is_number_integer()) return type_error(key, "a non-negative integer");
  return type_error(key, "a non-negative integer");
}

Result<std::optional<bool>> FieldReader::boolean(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::optional<bool>();
  if (!v->is_boolean()) return type_error(key, "a boolean");
  return std::optional<bool>(v->get<bool>());
}

Result<std::optional<std::string>> FieldReader::string(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::optional<std::string>();
  if (!v->is_string()) return type_error(key, "a string");
  return std::optional<std::string>(v->get<std::string>());
}

Result<std::optional<std::vector<std::string>>> FieldReader::strings(const char* key,
                                                                     bool single_ok) const {
  using Out = std::optional<std::vector<std::string>>;
  const json* v = raw(key);
  if (!v) return Out();
  const char* expected = single_ok ? "a string or a list of strings" : "a list of strings";
  if (single_ok && v->is_string()) return Out(std::vector<std::string>{v->get<std::string>()});
  if (!v->is_array()) return type_error(key, expected);
  std::vector<std::string> out;
  for (const json& item : *v) {
    if (!item.is_string()) {
      return make_error(ErrorCode::kInvalidArgument, std::string("`") + key + "` must be " +
                                                         expected + ", got an item of type " +
                                                         json_type_name(item));
    }
    out.push_back(item.get<std::string>());
  }
  return Out(std::move(out));
}

}  // namespace plimsoll::api
