// Reads the tenants file (tenants_file.h).
#include "sched/tenants_file.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace plimsoll::sched {
namespace {

using nlohmann::json;

Error bad(const std::string& file, const std::string& pointer, const std::string& rule) {
  return make_error(ErrorCode::kInvalidArgument, file + ": " + pointer + ": " + rule);
}

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<int64_t> count_field(const json& t, const char* key, const std::string& file, const std::string& at) {
  if (!t.contains(key)) return int64_t{0};
  const json& v = t[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0) return bad(file, at + "/" + key, "must be an integer >= 0 (0: no cap)");
  return v.get<int64_t>();
}

Result<TenantLimits> read_tenant(const json& t, const std::string& file, const std::string& at) {
  static const std::set<std::string> kKnown = {"name", "weight", "api_key_sha256", "max_sequences", "max_kv_share",
                                               "max_queued_tokens"};
  if (!t.is_object()) return bad(file, at, "must be an object");
  for (const auto& [k, v] : t.items()) {
    if (!kKnown.count(k)) return bad(file, at + "/" + k, "unknown field (known: name, weight, api_key_sha256, max_sequences, max_kv_share, max_queued_tokens)");
  }
  TenantLimits l;
  if (!t.contains("name") || !t["name"].is_string() || t["name"].get<std::string>().empty()) {
    return bad(file, at + "/name", "required, a non-empty string");
  }
  l.name = t["name"].get<std::string>();
  for (char c : l.name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return bad(file, at + "/name", "letters, digits, '-', '_' and '.' only (it is a metrics label value)");
    }
  }
  if (t.contains("weight")) {
    if (!t["weight"].is_number() || !(t["weight"].get<double>() > 0) || !std::isfinite(t["weight"].get<double>())) {
      return bad(file, at + "/weight", "must be a number > 0");
    }
    l.weight = t["weight"].get<double>();
  }
  PLIMSOLL_ASSIGN(l.max_sequences, count_field(t, "max_sequences", file, at));
  PLIMSOLL_ASSIGN(l.max_queued_tokens, count_field(t, "max_queued_tokens", file, at));
  if (t.contains("max_kv_share")) {
    const json& v = t["max_kv_share"];
    if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1) {
      return bad(file, at + "/max_kv_share", "must be a number in (0, 1]");
    }
    l.max_kv_share = v.get<double>();
  }
  return l;
}

}  // namespace

Result<TenantsFile> parse_tenants(const std::string& text, const std::string& file) {
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return bad(file, "", "not JSON");
  if (!doc.is_object()) return bad(file, "", "must be an object with \"tenants\"");
  for (const auto& [k, v] : doc.items()) {
    if (k != "tenants" && k != "default_tenant") return bad(file, "/" + k, "unknown field (known: tenants, default_tenant)");
  }
  if (!doc.contains("tenants") || !doc["tenants"].is_array()) return bad(file, "/tenants", "required, an array");
  TenantTable read;
  std::vector<std::pair<std::string, std::string>> keys;  // hash, tenant name
  std::set<std::string> names, hashes;
  for (size_t i = 0; i < doc["tenants"].size(); ++i) {
    const std::string at = "/tenants/" + std::to_string(i);
    const json& t = doc["tenants"][i];
    PLIMSOLL_ASSIGN(TenantLimits l, read_tenant(t, file, at));
    if (!names.insert(l.name).second) return bad(file, at + "/name", "\"" + l.name + "\" is named twice");
    if (t.contains("api_key_sha256")) {
      const json& ks = t["api_key_sha256"];
      if (!ks.is_array()) return bad(file, at + "/api_key_sha256", "must be an array of SHA-256 hex digests");
      for (size_t k = 0; k < ks.size(); ++k) {
        const std::string kat = at + "/api_key_sha256/" + std::to_string(k);
        if (!ks[k].is_string() || !is_sha256_hex(ks[k].get<std::string>())) {
          return bad(file, kat, "must be 64 lower-case hex digits (sha256sum of the key, e.g. printf %s KEY | sha256sum)");
        }
        if (!hashes.insert(ks[k].get<std::string>()).second) return bad(file, kat, "this key is listed twice");
        keys.emplace_back(ks[k].get<std::string>(), l.name);
      }
    }
    read.push_back(std::move(l));
  }
  std::string default_name = "default";
  if (doc.contains("default_tenant")) {
    if (!doc["default_tenant"].is_string()) return bad(file, "/default_tenant", "must be a tenant's name");
    default_name = doc["default_tenant"].get<std::string>();
    if (!names.count(default_name)) return bad(file, "/default_tenant", "\"" + default_name + "\" names no tenant");
  }
  TenantsFile out;
  const auto d = std::find_if(read.begin(), read.end(), [&](const TenantLimits& l) { return l.name == default_name; });
  out.tenants.push_back(d == read.end() ? TenantLimits{} : *d);
  for (const TenantLimits& l : read) {
    if (l.name != default_name) out.tenants.push_back(l);
  }
  for (const auto& [hash, name] : keys) {
    for (size_t t = 0; t < out.tenants.size(); ++t) {
      if (out.tenants[t].name == name) out.key_sha256.emplace_back(hash, static_cast<int32_t>(t));
    }
  }
  return out;
}

Result<TenantsFile> load_tenants_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::kIo, path + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_tenants(ss.str(), path);
}

}  // namespace plimsoll::sched
