// JSON files of a model folder (config.json, generation_config.json, ...):
// reading and typed field access whose errors name the file and the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace plimsoll {

// A parsed JSON object and the path it came from (for errors).
struct JsonFile {
  std::string path;
  nlohmann::json root;

  bool has(const std::string& field) const;  // present and not null
  // Missing field: kInvalidFile "<path>: missing field 'x'"; wrong type or
  // range: kInvalidFile "<path>: field 'x' ...".
  Result<int64_t> integer(const std::string& field, int64_t min, int64_t max) const;
  Result<int64_t> integer_or(const std::string& field, int64_t fallback, int64_t min,
                             int64_t max) const;
  Result<double> number_or(const std::string& field, double fallback) const;
  Result<bool> boolean_or(const std::string& field, bool fallback) const;
  Result<std::string> string(const std::string& field) const;
  Result<std::string> string_or(const std::string& field, const std::string& fallback) const;
  Error field_error(const std::string& field, const std::string& problem) const;
};

// config.json, generation_config.json, tokenizer_config.json, a shard index: larger ones are
// refused before they are read (a JSON tree takes ~25x its text; real ones are kilobytes).
inline constexpr int64_t kMaxJsonFileBytes = int64_t{64} << 20;

// Reads and parses `path`; its top level must be an object. kNotFound when the
// file does not exist, kIo when it cannot be read, kInvalidFile when it is not JSON
// or larger than kMaxJsonFileBytes.
Result<JsonFile> read_json_file(const std::string& path);
// Parses text (tests; safetensors headers): `path` is used in errors.
Result<JsonFile> parse_json_text(const std::string& text, const std::string& path);

}  // namespace plimsoll
