// One file of a repo into the cache, as huggingface_hub's hf_hub_download
// does: HEAD {endpoint}/{repo}/resolve/{revision}/{file} for the commit and
// the blob's etag, then (unless the blob is there) GET the bytes into
// blobs/<etag>.incomplete, resuming with Range from what an earlier run left,
// check the size (and the sha256 of LFS files), rename to blobs/<etag> and
// link snapshots/<commit>/<file> to it. One writer per blob (flock on
// .locks/models--org--name/<etag>.lock).
#pragma once

#include <string>

#include "core/result.h"
#include "hub/cache_layout.h"
#include "hub/download_progress.h"
#include "hub/http_fetch.h"
#include "hub/hub_error.h"

namespace plimsoll::hub {

// {endpoint}/{repo}/resolve/{revision, '/' escaped}/{file}
std::string resolve_url(const std::string& endpoint, const std::string& repo_id, const std::string& revision,
                        const std::string& file);

class FileDownloader {
 public:
  FileDownloader(const HubSettings& settings, const std::string& repo_id, DownloadProgress& progress);

  // The file at `revision` in the cache; returns the commit the hub named.
  // When `revision` is a commit and the snapshot already has the file, no
  // request is made. Errors name the repo, revision and file (hub_error.h).
  Result<std::string> fetch(const std::string& revision, const std::string& file);

  const RepoCache& cache() const { return cache_; }

 private:
  Status download_blob(const HttpAnswer& meta, const FileRef& ref);

  HubSettings settings_;
  std::string repo_id_;
  RepoCache cache_;
  HttpFetcher http_;
  DownloadProgress& progress_;
};

}  // namespace plimsoll::hub
