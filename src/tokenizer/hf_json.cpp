// JSON helpers for the tokenizer.json loader: the one place nlohmann's
// exceptions are caught; everything above sees Result values.
#include "tokenizer/hf_json.h"

namespace plimsoll::hf {

Result<Json> parse_json(std::string_view text, const std::string& file_name) {
  try {
    Json json = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) {
      return make_error(ErrorCode::kInvalidFile, file_name + ": not valid JSON");
    }
    return json;
  } catch (const std::exception& e) {  // allocation failures and the like
    return make_error(ErrorCode::kInvalidFile, file_name + ": " + e.what());
  }
}

const Json* find_member(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string field_name(const std::string& where, std::string_view key) {
  std::string name = where;
  // A top-level field follows "file: " without a dot.
  if (!name.empty() && name.back() != ' ') name += '.';
  name += key;
  return name;
}

Result<std::string> get_string(const Json& obj, std::string_view key, const std::string& where) {
  const Json* value = find_member(obj, key);
  if (value == nullptr) return invalid_field(where, key, "is missing");
  if (!value->is_string()) return invalid_field(where, key, "is not a string");
  return value->get<std::string>();
}

Result<std::string> get_string_or(const Json& obj, std::string_view key, std::string fallback,
                                  const std::string& where) {
  const Json* value = find_member(obj, key);
  if (value == nullptr) return fallback;
  if (!value->is_string()) return invalid_field(where, key, "is not a string");
  return value->get<std::string>();
}

Result<bool> get_bool_or(const Json& obj, std::string_view key, bool fallback,
                         const std::string& where) {
  const Json* value = find_member(obj, key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) return invalid_field(where, key, "is not a boolean");
  return value->get<bool>();
}

Result<int64_t> get_int_or(const Json& obj, std::string_view key, int64_t fallback,
                           const std::string& where) {
  const Json* value = find_member(obj, key);
  if (value == nullptr) return fallback;
  if (!value->is_number_integer()) return invalid_field(where, key, "is not an integer");
  return value->get<int64_t>();
}

Error unsupported_value(const std::string& where, std::string_view key, std::string_view value) {
  return make_error(ErrorCode::kUnsupported,
                    field_name(where, key) + " '" + std::string(value) + "' is not supported");
}

Error invalid_field(const std::string& where, std::string_view key, std::string_view problem) {
  return make_error(ErrorCode::kInvalidFile, field_name(where, key) + " " + std::string(problem));
}

}  // namespace plimsoll::hf
