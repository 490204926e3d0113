// An independent JSON-schema check for tests (the subset the grammar engine
// compiles): returns "" when `v` is valid under `s`, else what is wrong.
// Written from the JSON-schema spec, not from the grammar code.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace plimsoll::test {

inline size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

inline std::string schema_violation(const nlohmann::json& v, const nlohmann::json& s, const nlohmann::json* root = nullptr) {
  using nlohmann::json;
  if (!root) root = &s;
  if (s.is_boolean()) return s.get<bool>() ? "" : "false schema";
  if (s.contains("$ref")) {
    const std::string r = s["$ref"];
    const std::string name = r.substr(r.rfind('/') + 1);
    const json& defs = root->contains("$defs") ? (*root)["$defs"] : (*root)["definitions"];
    return schema_violation(v, defs[name], root);
  }
  if (s.contains("const") && v != s["const"]) return "not the const";
  if (s.contains("enum")) {
    bool found = false;
    for (const json& e : s["enum"]) found = found || e == v;
    if (!found) return "not in enum: " + v.dump();
  }
  if (s.contains("anyOf") || s.contains("oneOf")) {
    const json& options = s.contains("anyOf") ? s["anyOf"] : s["oneOf"];
    bool any = false;
    for (const json& o : options) any = any || schema_violation(v, o, root).empty();
    if (!any) return "matches no anyOf option: " + v.dump();
  }
  if (s.contains("type")) {
    std::vector<std::string> types;
    if (s["type"].is_string()) types.push_back(s["type"]);
    else for (const json& t : s["type"]) types.push_back(t);
    bool ok = false;
    for (const std::string& t : types) {
      ok = ok || (t == "object" && v.is_object()) || (t == "array" && v.is_array()) || (t == "string" && v.is_string()) ||
           (t == "integer" && v.is_number_integer()) || (t == "number" && v.is_number()) ||
           (t == "boolean" && v.is_boolean()) || (t == "null" && v.is_null());
    }
    if (!ok) return "wrong type: " + v.dump();
  }
  if (v.is_number()) {
    if (s.contains("minimum") && v.get<double>() < s["minimum"].get<double>()) return "below minimum";
    if (s.contains("exclusiveMinimum") && v.get<double>() <= s["exclusiveMinimum"].get<double>()) return "not above exclusiveMinimum";
    // Integers compared exactly (doubles round past 2^53).
    auto above = [&](const char* key) {
      const json& b = s[key];
      if (v.is_number_integer() && b.is_number_integer()) return v.get<int64_t>() > b.get<int64_t>();
      return v.get<double>() > b.get<double>();
    };
    auto at_least = [&](const char* key) {
      const json& b = s[key];
      if (v.is_number_integer() && b.is_number_integer()) return v.get<int64_t>() >= b.get<int64_t>();
      return v.get<double>() >= b.get<double>();
    };
    if (s.contains("maximum") && above("maximum")) return "above maximum";
    if (s.contains("exclusiveMaximum") && at_least("exclusiveMaximum")) return "not below exclusiveMaximum";
    // Integer multipleOf only (what the grammar supports), checked exactly.
    if (s.contains("multipleOf")) {
      if (!v.is_number_integer()) return "not an integer multiple: " + v.dump();
      if (v.get<int64_t>() % s["multipleOf"].get<int64_t>() != 0) return "not a multiple: " + v.dump();
    }
  }
  if (v.is_string()) {
    const size_t n = utf8_length(v.get<std::string>());
    if (s.contains("minLength") && n < s["minLength"].get<size_t>()) return "shorter than minLength";
    if (s.contains("maxLength") && n > s["maxLength"].get<size_t>()) return "longer than maxLength";
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return "fewer than minItems";
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return "more than maxItems";
    if (s.contains("items")) {
      for (const json& item : v) {
        const std::string why = schema_violation(item, s["items"], root);
        if (!why.empty()) return "item: " + why;
      }
    }
  }
  if (v.is_object()) {
    const json props = s.value("properties", json::object());
    for (const json& r : s.value("required", json::array())) {
      if (!v.contains(r.get<std::string>())) return "missing required " + r.get<std::string>();
    }
    for (const auto& [k, item] : v.items()) {
      if (props.contains(k)) {
        const std::string why = schema_violation(item, props[k], root);
        if (!why.empty()) return k + ": " + why;
      } else if (s.contains("additionalProperties")) {
        const json& extra = s["additionalProperties"];
        const std::string why = schema_violation(item, extra, root);
        if (!why.empty()) return "additional property " + k + ": " + why;
      }
    }
  }
  return "";
}

}  // namespace plimsoll::test
