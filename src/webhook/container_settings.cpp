// Reads one container: is it `plimsoll serve`, which flags and environment
// variables set which serve setting (serve's settings table), and its memory/CPU requests and limits.
#include "webhook/container_settings.h"

#include <sstream>
#include <fmt/format.h>

#include "core/bytes.h"
#include "server/serve_settings.h"

namespace plimsoll::webhook {
namespace {

using nlohmann::json;
using Tokens = std::vector<std::string>;

std::string str_at(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::string basename_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "registry:5000/team/plimsoll:0.1@sha256:..." -> "plimsoll"
std::string image_name(std::string image) {
  if (const size_t at = image.find('@'); at != std::string::npos) image.resize(at);
  image = basename_of(image);
  if (const size_t colon = image.find(':'); colon != std::string::npos) image.resize(colon);
  return image;
}

// command + args as words; a shell string that mentions plimsoll is split on blanks.
Tokens words(const json& container) {
  Tokens out;
  for (const char* key : {"command", "args"}) {
    if (!container.contains(key) || !container[key].is_array()) continue;
    for (const json& w : container[key]) {
      if (!w.is_string()) continue;
      const std::string s = w.get<std::string>();
      if (s.find("plimsoll ") == std::string::npos) {
        out.push_back(s);
        continue;
      }
      std::istringstream in(s);
      for (std::string part; in >> part;) out.push_back(part);
    }
  }
  return out;
}

bool has_command(const json& c) { return c.contains("command") && c["command"].is_array() && !c["command"].empty(); }

// Index of the first word after `plimsoll serve`, or nullopt.
std::optional<size_t> serve_args_start(const json& container) {
  const Tokens w = words(container);
  for (size_t i = 0; i + 1 < w.size(); ++i) {
    if (basename_of(w[i]) == "plimsoll") return w[i + 1] == "serve" ? std::optional(i + 2) : std::nullopt;
  }
  if (!has_command(container) && image_name(str_at(container, "image")) == "plimsoll") return size_t{0};
  return std::nullopt;
}

// An environment variable of a setting that changes the plan: worth a warning when unreadable.
bool changes_plan_by_env(const std::string& name) {
  const ServeSetting* s = find_serve_setting_by_env(name);
  return s != nullptr && s->changes_plan;
}

// --- resources ---

Result<std::optional<int64_t>> quantity(const json& resources, const char* group, const char* name, bool cpu) {
  if (!resources.is_object() || !resources.contains(group) || !resources[group].is_object() ||
      !resources[group].contains(name)) {
    return std::optional<int64_t>();
  }
  const json& q = resources[group][name];
  const std::string text = q.is_string() ? q.get<std::string>() : q.dump();
  const std::string what = std::string("resources.") + group + "." + name;
  auto v = cpu ? parse_cpu_count(text) : parse_bytes(text);
  if (!v) return v.error().with_context(what);
  return std::optional<int64_t>(*v);
}

Result<ContainerResources> read_resources(const json& container) {
  ContainerResources r;
  const json resources = container.contains("resources") ? container["resources"] : json::object();
  PLIMSOLL_ASSIGN(r.memory_request_bytes, quantity(resources, "requests", "memory", false));
  PLIMSOLL_ASSIGN(r.memory_limit_bytes, quantity(resources, "limits", "memory", false));
  PLIMSOLL_ASSIGN(r.cpu_request, quantity(resources, "requests", "cpu", true));
  PLIMSOLL_ASSIGN(r.cpu_limit, quantity(resources, "limits", "cpu", true));
  if (!r.memory_request_bytes) r.memory_request_bytes = r.memory_limit_bytes;  // as the API server defaults it
  return r;
}

// --- environment ---

// resourceFieldRef: the value the kubelet would put in the variable (quantity / divisor, rounded up).
std::optional<std::string> resource_field_value(const json& ref, const ContainerResources& r, std::string& warning) {
  const std::string resource = str_at(ref, "resource");
  std::optional<int64_t> value;
  int64_t divisor = 1;
  if (resource == "limits.memory") value = r.memory_limit_bytes;
  else if (resource == "requests.memory") value = r.memory_request_bytes;
  else if (resource == "limits.cpu") value = r.cpu_limit;
  else if (resource == "requests.cpu") value = r.cpu_request;
  if (!value) {
    warning = "resourceFieldRef " + resource + " is not set on the container: the kubelet gives node capacity";
    return std::nullopt;
  }
  if (ref.contains("divisor") && resource.find("memory") != std::string::npos) {
    auto d = parse_bytes(ref["divisor"].is_string() ? ref["divisor"].get<std::string>() : ref["divisor"].dump());
    if (d && *d > 0) divisor = *d;
  }
  return fmt::to_string((*value + divisor - 1) / divisor);
}

struct EnvVar {
  std::string name;
  std::optional<std::string> value;  // nullopt: from a source the webhook cannot read
};

std::vector<EnvVar> read_env(const json& container, const ContainerResources& r, std::vector<std::string>& warnings) {
  std::vector<EnvVar> env;
  if (!container.contains("env") || !container["env"].is_array()) return env;
  for (const json& e : container["env"]) {
    EnvVar v{str_at(e, "name"), std::nullopt};
    if (e.contains("value") && e["value"].is_string()) {
      v.value = e["value"].get<std::string>();
    } else if (e.contains("valueFrom") && e["valueFrom"].contains("resourceFieldRef")) {
      std::string warning;
      v.value = resource_field_value(e["valueFrom"]["resourceFieldRef"], r, warning);
      if (!warning.empty() && changes_plan_by_env(v.name)) warnings.push_back(v.name + ": " + warning);
    } else if (e.contains("valueFrom")) {
      if (changes_plan_by_env(v.name)) warnings.push_back(v.name + " comes from a ConfigMap/Secret/field the webhook cannot read; serve's default was assumed");
    } else {
      v.value = "";
    }
    env.push_back(std::move(v));
  }
  return env;
}

// $(VAR) in args, as the kubelet expands it from the container's env.
std::string expand(const std::string& word, const std::vector<EnvVar>& env) {
  if (word.size() < 4 || word.rfind("$(", 0) != 0 || word.back() != ')') return word;
  const std::string name = word.substr(2, word.size() - 3);
  for (const EnvVar& e : env) {
    if (e.name == name && e.value) return *e.value;
  }
  return word;
}

Status apply_env(ContainerSettings& s, const std::vector<EnvVar>& env) {
  for (const EnvVar& e : env) {
    const ServeSetting* setting = find_serve_setting_by_env(e.name);
    if (!setting || !e.value || e.value->empty()) continue;
    PLIMSOLL_TRY(write_serve_setting(*setting, s.serve, "env " + e.name, *e.value));
  }
  return {};
}

Status apply_args(ContainerSettings& s, const Tokens& args, const std::vector<EnvVar>& env) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    bool inline_value = false;
    if (const size_t eq = flag.find('='); flag.rfind("-", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
      inline_value = true;
    }
    const ServeSetting* setting = find_serve_setting_by_flag(flag);
    if (!setting) {
      s.warnings.push_back("argument '" + args[i] + "' is not a serve flag the webhook knows");
      continue;
    }
    if (!setting->takes_value()) {
      if (inline_value) return make_error(ErrorCode::kInvalidArgument, flag + " takes no value");
      value = "true";
    } else if (!inline_value) {
      if (i + 1 >= args.size()) return make_error(ErrorCode::kInvalidArgument, flag + " needs a value");
      value = args[++i];
    }
    PLIMSOLL_TRY(write_serve_setting(*setting, s.serve, flag, expand(value, env)));
  }
  return {};
}

}  // namespace

bool runs_plimsoll_serve(const json& container, const std::string& wanted) {
  if (!container.is_object()) return false;
  if (!wanted.empty()) return str_at(container, "name") == wanted;
  return serve_args_start(container).has_value();
}

Result<ContainerSettings> read_container_settings(const json& container) {
  ContainerSettings s;
  s.name = str_at(container, "name");
  PLIMSOLL_ASSIGN(s.resources, read_resources(container));
  const std::vector<EnvVar> env = read_env(container, s.resources, s.warnings);
  if (container.contains("envFrom")) {
    s.warnings.push_back("envFrom is not read: settings it holds are not checked (serve's defaults were assumed)");
  }
  PLIMSOLL_TRY(apply_env(s, env));
  const Tokens w = words(container);
  const size_t start = serve_args_start(container).value_or(has_command(container) ? w.size() : 0);
  PLIMSOLL_TRY(apply_args(s, Tokens(w.begin() + static_cast<std::ptrdiff_t>(start), w.end()), env));
  return s;
}

}  // namespace plimsoll::webhook
