// Where the Hugging Face cache lives and how to reach the hub, from the same
// environment variables huggingface_hub reads (docs/huggingface.md).
#pragma once

#include <functional>
#include <string>

namespace plimsoll::hub {

struct HubSettings {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT (no trailing '/')
  std::string token;                                 // HF_TOKEN, else the file $HF_HOME/token
  std::string cache_dir;                             // HF_HUB_CACHE, else $HF_HOME/hub
  bool offline = false;                              // HF_HUB_OFFLINE=1 (or TRANSFORMERS_OFFLINE)
  bool progress = true;                              // HF_HUB_DISABLE_PROGRESS_BARS=1 turns it off
  int timeout_seconds = 10;                          // HF_HUB_DOWNLOAD_TIMEOUT: connect and read
};

// Reads a variable; nullptr when unset. Tests pass their own.
using EnvLookup = std::function<const char*(const char*)>;

// The settings from the environment:
//   cache: HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, where HF_HOME
//          defaults to $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface;
//   token: HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the file HF_TOKEN_PATH
//          (default $HF_HOME/token) when it exists;
//   offline: HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is 1/ON/YES/TRUE.
HubSettings settings_from_env(const EnvLookup& env);
HubSettings settings_from_env();  // std::getenv

// huggingface_hub's truth test for flags: 1, ON, YES, TRUE (any case).
bool env_true(const char* value);

}  // namespace plimsoll::hub
