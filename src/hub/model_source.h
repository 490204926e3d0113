// `--model` as a local path or a Hugging Face repo id: the one entry point
// the commands call. A repo id resolves to its snapshot folder in the
// Hugging Face cache (downloading what is missing unless offline), which then
// loads as any local Hugging Face folder. See docs/huggingface.md.
#pragma once

#include <cstdio>
#include <string>

#include "core/result.h"
#include "hub/hub_settings.h"
#include "hub/repo_ref.h"

namespace plimsoll::hub {

// An existing path is returned as is. Otherwise `arg` must be a repo id
// ("org/name[@revision]"): a complete cached snapshot is used without any
// request; else the missing files are downloaded (progress on `progress`,
// nullptr for none) — unless settings.offline, where a missing file is an
// error naming it and the cache folder.
Result<std::string> resolve_model_source(const std::string& arg, const HubSettings& settings,
                                         std::FILE* progress);

// The snapshot folder of `ref` (same rules, for a parsed id).
Result<std::string> hub_snapshot(const RepoRef& ref, const HubSettings& settings, std::FILE* progress);

}  // namespace plimsoll::hub
