// The file list of a model snapshot and its check against the cache.
#include "hub/snapshot_files.h"

#include "formats/safetensors.h"

namespace plimsoll::hub {

const std::vector<std::string>& optional_files() {
  static const std::vector<std::string> files = {"generation_config.json", "tokenizer.json", "tokenizer_config.json"};
  return files;
}

SnapshotState check_snapshot(const RepoCache& cache, const std::string& commit) {
  SnapshotState s;
  if (!cache.has_file(commit, kConfigFile)) s.missing.push_back(kConfigFile);
  for (const std::string& f : optional_files()) {
    if (!cache.has_file(commit, f) && !cache.known_missing(commit, f)) s.unknown.push_back(f);
  }
  if (cache.has_file(commit, kSingleWeights)) return s;
  if (!cache.has_file(commit, kWeightsIndex)) {
    s.missing.push_back(cache.known_missing(commit, kSingleWeights) ? kWeightsIndex : kSingleWeights);
    return s;
  }
  auto shards = safetensors_index_shards(cache.snapshot_file(commit, kWeightsIndex).string());
  if (!shards) return s;  // the loader reports a bad index with its details
  for (const std::string& shard : *shards) {
    if (!cache.has_file(commit, shard)) s.missing.push_back(shard);
  }
  return s;
}

}  // namespace plimsoll::hub
