// JSON access for tokenizer.json / tokenizer_config.json without exceptions:
// file parsing at the edge, typed field getters whose errors name file and field.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <string_view>

#include "core/result.h"

namespace plimsoll::hf {

using Json = nlohmann::json;

// Token ids at or above this are refused (tables are sized by the largest id).
inline constexpr int64_t kMaxTokenIds = int64_t{1} << 24;
// Ids may leave holes (added tokens past a padded vocabulary) but not many: an id must be
// below the number of tokens the file defines plus this gap, so a table sized by the
// largest id stays proportional to the file (one id of 2^24 - 1 would take 512 MiB).
inline constexpr int64_t kMaxTokenIdGap = int64_t{1} << 16;
// tokenizer.json / tokenizer_config.json larger than this are refused before they are
// read (their JSON tree takes ~25x the text; real ones are below 40 MB).
inline constexpr int64_t kMaxTokenizerFileBytes = int64_t{128} << 20;

// The largest id + 1 a file defining `n_tokens` tokens may use.
inline int64_t token_id_limit(int64_t n_tokens) { return std::min(kMaxTokenIds, n_tokens + kMaxTokenIdGap); }

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
