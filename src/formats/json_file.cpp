// JsonFile: whole-file reads, JSON parsing without exceptions, and typed
// getters that report "<file>: field '<name>' ..." on any mismatch.
#include "formats/json_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace plimsoll {

bool JsonFile::has(const std::string& field) const {
  auto it = root.find(field);
  return it != root.end() && !it->is_null();
}

Error JsonFile::field_error(const std::string& field, const std::string& problem) const {
  return make_error(ErrorCode::kInvalidFile, path + ": field '" + field + "' " + problem);
}

Result<int64_t> JsonFile::integer(const std::string& field, int64_t min, int64_t max) const {
  if (!has(field)) return make_error(ErrorCode::kInvalidFile, path + ": missing field '" + field + "'");
  const nlohmann::json& v = root.at(field);
  if (!v.is_number_integer()) return field_error(field, "must be an integer, is " + v.dump());
  const int64_t n = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                        ? INT64_MAX
                        : v.get<int64_t>();
  if (n < min || n > max) {
    return field_error(field, "is " + std::to_string(n) + ", must be " + std::to_string(min) +
                                  " to " + std::to_string(max));
  }
  return n;
}

Result<int64_t> JsonFile::integer_or(const std::string& field, int64_t fallback, int64_t min,
                                     int64_t max) const {
  if (!has(field)) return fallback;
  return integer(field, min, max);
}

Result<double> JsonFile::number_or(const std::string& field, double fallback) const {
  if (!has(field)) return fallback;
  const nlohmann::json& v = root.at(field);
  if (!v.is_number()) return field_error(field, "must be a number, is " + v.dump());
  return v.get<double>();
}

Result<bool> JsonFile::boolean_or(const std::string& field, bool fallback) const {
  if (!has(field)) return fallback;
  const nlohmann::json& v = root.at(field);
  if (!v.is_boolean()) return field_error(field, "must be true or false, is " + v.dump());
  return v.get<bool>();
}

Result<std::string> JsonFile::string(const std::string& field) const {
  if (!has(field)) return make_error(ErrorCode::kInvalidFile, path + ": missing field '" + field + "'");
  const nlohmann::json& v = root.at(field);
  if (!v.is_string()) return field_error(field, "must be a string, is " + v.dump());
  return v.get<std::string>();
}

Result<std::string> JsonFile::string_or(const std::string& field,
                                        const std::string& fallback) const {
  if (!has(field)) return fallback;
  return string(field);
}

Result<JsonFile> parse_json_text(const std::string& text, const std::string& path) {
  nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return make_error(ErrorCode::kInvalidFile, path + ": not valid JSON");
  if (!root.is_object()) {
    return make_error(ErrorCode::kInvalidFile, path + ": the top level must be a JSON object");
  }
  return JsonFile{path, std::move(root)};
}

Result<JsonFile> read_json_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return make_error(ErrorCode::kNotFound, path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kIo, path + ": cannot open: " + std::strerror(errno));
  const auto size_bytes = std::filesystem::file_size(path, ec);
  if (!ec && size_bytes > static_cast<uintmax_t>(kMaxJsonFileBytes)) {
    return make_error(ErrorCode::kInvalidFile, path + ": " + std::to_string(size_bytes) + " bytes, more than the " +
                                                   std::to_string(kMaxJsonFileBytes) + " a JSON side file may have");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_error(ErrorCode::kIo, path + ": read failed");
  return parse_json_text(text.str(), path);
}

}  // namespace plimsoll
