// JSON access for tokenizer.json / tokenizer_config.json without exceptions:
// file parsing at the edge, typed field getters whose errors name file and field.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "core/result.h"

namespace plimsoll::hf {

using Json = nlohmann::json;

// Token ids at or above this are refused (tables are sized by the largest id).
inline constexpr int64_t kMaxTokenIds = int64_t{1} << 24;

// Parses JSON text; kInvalidFile naming `file_name` when it is not JSON.
Result<Json> parse_json(std::string_view text, const std::string& file_name);

// The member `key` of `obj`, nullptr when absent or null.
const Json* find_member(const Json& obj, std::string_view key);

// "<where>.<key>", the way messages name a field ("tokenizer.json: model.type").
std::string field_name(const std::string& where, std::string_view key);

Result<std::string> get_string(const Json& obj, std::string_view key, const std::string& where);
Result<std::string> get_string_or(const Json& obj, std::string_view key, std::string fallback,
                                  const std::string& where);
Result<bool> get_bool_or(const Json& obj, std::string_view key, bool fallback,
                         const std::string& where);
Result<int64_t> get_int_or(const Json& obj, std::string_view key, int64_t fallback,
                           const std::string& where);

// kUnsupported: "<where>.<key> '<value>' is not supported".
Error unsupported_value(const std::string& where, std::string_view key, std::string_view value);
// kInvalidFile: "<where>.<key> <problem>".
Error invalid_field(const std::string& where, std::string_view key, std::string_view problem);

}  // namespace plimsoll::hf
