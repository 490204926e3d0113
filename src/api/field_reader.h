// FieldReader: typed, optional access to a JSON object's fields with 422
// messages that name the field ("`top_k` must be an integer, got string").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/json_text.h"
#include "core/result.h"

namespace plimsoll::api {

// Absent and null fields read as std::nullopt; a wrong type is an error.
class FieldReader {
 public:
  // `object` must outlive the reader; a non-object is an error on every read.
  explicit FieldReader(const json& object) : object_(&object) {}

  Result<std::optional<double>> number(const char* key) const;
  Result<std::optional<int64_t>> integer(const char* key) const;
  Result<std::optional<uint64_t>> unsigned_integer(const char* key) const;
  Result<std::optional<bool>> boolean(const char* key) const;
  Result<std::optional<std::string>> string(const char* key) const;
  // A list of strings; with `single_ok` a lone string counts as a list of one.
  Result<std::optional<std::vector<std::string>>> strings(const char* key, bool single_ok) const;
  // The raw value, when present and not null.
  const json* raw(const char* key) const;

 private:
  Error type_error(const char* key, const char* expected) const;
  const json* object_;
};

// "string", "number", "object"... for messages.
const char* json_type_name(const json& value);

}  // namespace plimsoll::api
