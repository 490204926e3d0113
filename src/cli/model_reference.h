// -m/--model for every command: a local file or folder, or a Hugging Face
// repo id (org/name[@revision]) resolved through the Hugging Face cache,
// downloading what is missing (docs/huggingface.md).
#pragma once

#include <string>

#include "core/result.h"

namespace CLI {
class App;
}

namespace plimsoll::cli {

struct HubFlags {
  bool offline = false;   // --offline: only the cache (as HF_HUB_OFFLINE=1)
  std::string revision;   // --revision: branch, tag or commit (as org/name@revision)
};

// The help text of -m/--model.
extern const char* const kModelHelp;

// Adds --revision and --offline.
void add_hub_flags(CLI::App& cmd, HubFlags& flags);

// The local path for `arg`: itself when it exists, else the snapshot folder of
// the repo id (settings from HF_* variables, progress on stderr).
Result<std::string> resolve_model_arg(const std::string& arg, const HubFlags& flags);

// resolve_model_arg into `arg`; on error prints "error: ..." and returns false.
bool resolve_model_in_place(std::string& arg, const HubFlags& flags);

}  // namespace plimsoll::cli
