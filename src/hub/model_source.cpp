// Model references: local path, cached snapshot, or a download.
#include "hub/model_source.h"

#include <filesystem>

#include "formats/safetensors.h"
#include "hub/file_download.h"
#include "hub/snapshot_files.h"

namespace fs = std::filesystem;

namespace plimsoll::hub {
namespace {

std::string label(const RepoRef& ref) { return ref.repo_id + "@" + ref.revision; }

Error offline_error(const RepoRef& ref, const RepoCache& cache, const std::string& what) {
  return make_error(ErrorCode::kNotFound, label(ref) + ": offline (HF_HUB_OFFLINE or --offline) and " + what +
                                              " in the cache " + cache.root().string() +
                                              ": run once online to download it");
}

// An optional file: true when it is in the snapshot, false when the hub says 404.
Result<bool> fetch_optional(FileDownloader& d, const std::string& commit, const std::string& file) {
  if (d.cache().has_file(commit, file)) return true;
  if (d.cache().known_missing(commit, file)) return false;
  auto got = d.fetch(commit, file);
  if (got) return true;
  if (got.error().code != ErrorCode::kNotFound) return got.error();
  PLIMSOLL_TRY(d.cache().mark_missing(commit, file));
  return false;
}

Status fetch_weights(FileDownloader& d, const RepoRef& ref, const std::string& commit) {
  PLIMSOLL_ASSIGN(const bool single, fetch_optional(d, commit, kSingleWeights));
  if (single) return {};
  auto index = d.fetch(commit, kWeightsIndex);
  if (!index && index.error().code == ErrorCode::kNotFound) {
    return make_error(ErrorCode::kNotFound, label(ref) + ": the repo has neither " + kSingleWeights + " nor " +
                                                kWeightsIndex + " (Plimsoll loads safetensors weights)");
  }
  if (!index) return index.error();
  PLIMSOLL_ASSIGN(const auto shards, safetensors_index_shards(d.cache().snapshot_file(commit, kWeightsIndex).string()));
  for (const std::string& shard : shards) PLIMSOLL_TRY(d.fetch(commit, shard));
  return {};
}

Result<std::string> download_snapshot(const RepoRef& ref, const HubSettings& settings, std::FILE* out) {
  DownloadProgress progress(settings.progress ? out : nullptr);
  FileDownloader d(settings, ref.repo_id, progress);
  PLIMSOLL_ASSIGN(const std::string commit, d.fetch(ref.revision, kConfigFile));
  PLIMSOLL_TRY(d.cache().write_ref(ref.revision, commit));
  for (const std::string& f : optional_files()) PLIMSOLL_TRY(fetch_optional(d, commit, f));
  PLIMSOLL_TRY(fetch_weights(d, ref, commit));
  return d.cache().snapshot_dir(commit).string();
}

}  // namespace

Result<std::string> hub_snapshot(const RepoRef& ref, const HubSettings& settings, std::FILE* progress) {
  const RepoCache cache(settings.cache_dir, ref.repo_id);
  const auto commit = cache.commit_of(ref.revision);
  if (commit) {
    const SnapshotState state = check_snapshot(cache, *commit);
    if (state.missing.empty() && (settings.offline || state.unknown.empty())) {
      return cache.snapshot_dir(*commit).string();
    }
    if (settings.offline) {
      return offline_error(ref, cache, state.missing.front() + " of snapshot " + *commit + " is missing");
    }
    if (state.missing.empty()) {  // only optional files are unknown: the hub may say; without it, use the cache
      auto got = download_snapshot(ref, settings, progress);
      if (got || got.error().code != ErrorCode::kUnavailable) return got;
      if (progress) {
        std::fprintf(progress, "note: %s (using the cached snapshot %s)\n", got.error().message.c_str(),
                     commit->c_str());
      }
      return cache.snapshot_dir(*commit).string();
    }
  } else if (settings.offline) {
    return offline_error(ref, cache, "revision '" + ref.revision + "' is not known (no refs/" + ref.revision + ")");
  }
  return download_snapshot(ref, settings, progress);
}

Result<std::string> resolve_model_source(const std::string& arg, const HubSettings& settings, std::FILE* progress) {
  std::error_code ec;
  if (fs::exists(arg, ec)) return arg;
  const std::string ext = fs::path(arg).extension().string();
  if (ext == ".gguf" || ext == ".bin" || ext == ".safetensors" || arg.rfind('.', 0) == 0 || arg.rfind('/', 0) == 0) {
    return make_error(ErrorCode::kNotFound, arg + ": no such file or folder");
  }
  PLIMSOLL_ASSIGN(const RepoRef ref, parse_repo_ref(arg));
  return hub_snapshot(ref, settings, progress);
}

}  // namespace plimsoll::hub
