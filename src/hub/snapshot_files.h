// Which files of a repo make a model for Plimsoll, and whether a cached
// snapshot holds them: config.json (required); generation_config.json,
// tokenizer.json, tokenizer_config.json (optional: the hub may answer 404);
// the weights: model.safetensors, else model.safetensors.index.json and every
// shard it names.
#pragma once

#include <string>
#include <vector>

#include "hub/cache_layout.h"

namespace plimsoll::hub {

inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kSingleWeights = "model.safetensors";
inline constexpr const char* kWeightsIndex = "model.safetensors.index.json";
const std::vector<std::string>& optional_files();

struct SnapshotState {
  std::vector<std::string> missing;  // required files the snapshot lacks
  std::vector<std::string> unknown;  // optional files neither there nor known to be absent
  bool complete() const { return missing.empty() && unknown.empty(); }
};

// What snapshots/<commit> holds (no network).
SnapshotState check_snapshot(const RepoCache& cache, const std::string& commit);

}  // namespace plimsoll::hub
