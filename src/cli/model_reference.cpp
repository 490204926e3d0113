// -m as a path or a Hugging Face repo id, through plimsoll_hub.
#include "cli/model_reference.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <spdlog/spdlog.h>

#include "hub/model_source.h"

namespace plimsoll::cli {

const char* const kModelHelp =
    "Model: a GGUF or llama2.c file, a Hugging Face folder, or a Hugging Face repo id org/name[@revision] "
    "(downloaded into the Hugging Face cache: HF_HUB_CACHE or $HF_HOME/hub; HF_ENDPOINT, HF_TOKEN, "
    "HF_HUB_OFFLINE; see docs/huggingface.md)";

void add_hub_flags(CLI::App& cmd, HubFlags& flags) {
  cmd.add_option("--revision", flags.revision,
                 "With a repo id: the branch, tag or commit to use (default main; same as org/name@REV)");
  cmd.add_flag("--offline", flags.offline,
               "With a repo id: use only the Hugging Face cache, never the network (as HF_HUB_OFFLINE=1)");
}

Result<std::string> resolve_model_arg(const std::string& arg, const HubFlags& flags) {
  hub::HubSettings settings = hub::settings_from_env();
  settings.offline = settings.offline || flags.offline;
  std::string ref = arg;
  if (!flags.revision.empty() && ref.find('@') == std::string::npos) ref += "@" + flags.revision;
  return hub::resolve_model_source(ref, settings, stderr);
}

bool resolve_model_in_place(std::string& arg, const HubFlags& flags) {
  auto path = resolve_model_arg(arg, flags);
  if (!path) {
    spdlog::error("{}", path.error().message);
    return false;
  }
  arg = *path;
  return true;
}

}  // namespace plimsoll::cli
