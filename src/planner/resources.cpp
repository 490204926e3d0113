// Resource profiles: YAML is read into the same JSON tree, then searched for
// the first resources block with a memory limit (Kubernetes quantities).
#include "planner/resources.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/bytes.h"

namespace plimsoll::planner {
namespace {

using nlohmann::json;

json yaml_to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    json o = json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (const auto& v : n) a.push_back(yaml_to_json(v));
    return a;
  }
  if (n.IsScalar()) return n.as<std::string>();
  return nullptr;
}

Result<json> parse_tree(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded()) return make_error(ErrorCode::kInvalidArgument, "resources: not valid JSON");
    return j;
  }
  try {
    json out = json::array();
    for (const YAML::Node& doc : YAML::LoadAll(std::string(text))) out.push_back(yaml_to_json(doc));
    return out.size() == 1 ? out[0] : out;
  } catch (const YAML::Exception& e) {
    return make_error(ErrorCode::kInvalidArgument, std::string("resources: not valid YAML: ") + e.what());
  }
}

bool has_memory_limit(const json& j) {
  return j.is_object() && j.contains("limits") && j["limits"].is_object() && j["limits"].contains("memory");
}

// Depth-first: the block itself, else the first "resources" value that has limits.memory.
const json* find_block(const json& j, const std::string& path, std::string& where) {
  if (has_memory_limit(j)) {
    where = path.empty() ? "resources" : path;
    return &j;
  }
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string p = path.empty() ? it.key() : path + "." + it.key();
      if (const json* b = find_block(*it, p, where)) return b;
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      if (const json* b = find_block(j[i], path + "[" + std::to_string(i) + "]", where)) return b;
    }
  }
  return nullptr;
}

Result<int64_t> quantity(const json& v, const std::string& name) {
  const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  auto b = parse_bytes(text);
  if (!b) return make_error(ErrorCode::kInvalidArgument, name + ": " + b.error().message);
  return *b;
}

}  // namespace

Result<ResourceProfile> parse_resources(std::string_view text) {
  PLIMSOLL_ASSIGN(json tree, parse_tree(text));
  ResourceProfile r;
  const json* block = find_block(tree, "", r.where);
  if (!block) {
    return make_error(ErrorCode::kInvalidArgument,
                      "resources: no block with limits.memory (e.g. {\"limits\":{\"memory\":\"12Gi\"}})");
  }
  PLIMSOLL_ASSIGN(r.memory_limit_bytes, quantity((*block)["limits"]["memory"], r.where + ".limits.memory"));
  if (block->contains("requests") && (*block)["requests"].contains("memory")) {
    PLIMSOLL_ASSIGN(r.memory_request_bytes,
                    quantity((*block)["requests"]["memory"], r.where + ".requests.memory"));
  }
  if ((*block)["limits"].contains("cpu")) {
    const json& cpu = (*block)["limits"]["cpu"];
    r.cpu_limit = cpu.is_string() ? cpu.get<std::string>() : cpu.dump();
  }
  return r;
}

Result<ResourceProfile> read_resources_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return make_error(ErrorCode::kIo, path + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  auto r = parse_resources(ss.str());
  if (!r) return r.error().with_context(path);
  return r;
}

}  // namespace plimsoll::planner
