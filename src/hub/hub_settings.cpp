// HubSettings from environment variables, with huggingface_hub's defaults.
#include "hub/hub_settings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string_view>

namespace plimsoll::hub {
namespace {

std::string get(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v ? std::string(v) : std::string();
}

std::string first_set(const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    std::string v = get(env, n);
    if (!v.empty()) return v;
  }
  return {};
}

std::string expand_home(const EnvLookup& env, std::string path) {
  if (path.rfind("~/", 0) == 0) path = get(env, "HOME") + path.substr(1);
  return path;
}

std::string trim(std::string s) {
  const auto space = [](unsigned char c) { return std::isspace(c); };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
  return s;
}

std::string read_token_file(const std::string& path) {
  std::ifstream in(path);
  std::string token;
  std::getline(in, token);
  return trim(token);
}

}  // namespace

bool env_true(const char* value) {
  if (!value) return false;
  std::string v(value);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::toupper(c); });
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

HubSettings settings_from_env(const EnvLookup& env) {
  HubSettings s;
  std::string endpoint = get(env, "HF_ENDPOINT");
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  if (!endpoint.empty()) s.endpoint = endpoint;

  const std::string xdg = get(env, "XDG_CACHE_HOME"), home = get(env, "HF_HOME");
  const std::string hf_home =
      expand_home(env, !home.empty() ? home : (xdg.empty() ? std::string("~/.cache") : xdg) + "/huggingface");
  const std::string cache = first_set(env, {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"});
  s.cache_dir = cache.empty() ? hf_home + "/hub" : expand_home(env, cache);

  s.token = trim(first_set(env, {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}));
  if (s.token.empty()) {
    const std::string path = get(env, "HF_TOKEN_PATH");
    s.token = read_token_file(path.empty() ? hf_home + "/token" : expand_home(env, path));
  }
  s.offline = env_true(env("HF_HUB_OFFLINE")) || env_true(env("TRANSFORMERS_OFFLINE"));
  s.progress = !env_true(env("HF_HUB_DISABLE_PROGRESS_BARS"));
  const std::string timeout = get(env, "HF_HUB_DOWNLOAD_TIMEOUT");
  if (!timeout.empty()) s.timeout_seconds = std::max(1, std::atoi(timeout.c_str()));
  return s;
}

HubSettings settings_from_env() {
  return settings_from_env([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

}  // namespace plimsoll::hub
