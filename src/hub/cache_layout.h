// One repo's folder in the Hugging Face cache, laid out as huggingface_hub
// lays it out, so either tool reads what the other downloaded:
//   <cache>/models--org--name/refs/<revision>          the commit hash
//   <cache>/models--org--name/blobs/<etag>             file contents (sha256 for LFS files)
//   <cache>/models--org--name/blobs/<etag>.incomplete  a download in progress
//   <cache>/models--org--name/snapshots/<commit>/<file> -> ../../blobs/<etag>
//   <cache>/models--org--name/.no_exist/<commit>/<file> the hub said 404
//   <cache>/.locks/models--org--name/<etag>.lock       one writer per blob
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/result.h"

namespace plimsoll::hub {

// "org/name" -> "models--org--name".
std::string repo_folder_name(const std::string& repo_id);

class RepoCache {
 public:
  RepoCache(const std::string& cache_dir, const std::string& repo_id);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path blob(const std::string& etag) const;
  std::filesystem::path incomplete(const std::string& etag) const;
  std::filesystem::path lock(const std::string& etag) const;
  std::filesystem::path snapshot_dir(const std::string& commit) const;
  std::filesystem::path snapshot_file(const std::string& commit, const std::string& file) const;

  // The commit a revision points to: the revision itself when it is a commit
  // hash, else refs/<revision>; nullopt when unknown.
  std::optional<std::string> commit_of(const std::string& revision) const;
  Status write_ref(const std::string& revision, const std::string& commit) const;

  // The snapshot's file is there (its link resolves to a whole blob).
  bool has_file(const std::string& commit, const std::string& file) const;
  // The hub answered 404 for this file at this commit (recorded by mark_missing).
  bool known_missing(const std::string& commit, const std::string& file) const;
  Status mark_missing(const std::string& commit, const std::string& file) const;
  // snapshots/<commit>/<file> -> the blob, as a relative link (replaces an old one).
  Status link(const std::string& commit, const std::string& file, const std::string& etag) const;

 private:
  std::filesystem::path cache_;
  std::filesystem::path root_;
  std::string folder_;
};

}  // namespace plimsoll::hub
