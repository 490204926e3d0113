// The cache layout of huggingface_hub (file_download.py): paths, refs, links.
#include "hub/cache_layout.h"

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

#include "hub/repo_ref.h"

namespace fs = std::filesystem;

namespace plimsoll::hub {
namespace {

Status make_parent(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return make_error(ErrorCode::kIo, "cannot create " + path.parent_path().string() + ": " + ec.message());
  return {};
}

// A name beside `path` of this process and thread: written, then renamed over
// `path`, so that concurrent writers and readers never see half a file or link.
fs::path temp_beside(const fs::path& path) {
  return path.string() + ".tmp" + std::to_string(::getpid()) + "-" +
         std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
}

}  // namespace

std::string repo_folder_name(const std::string& repo_id) {
  std::string out = "models--";
  for (char c : repo_id) {
    if (c == '/') out += "--";
    else out += c;
  }
  return out;
}

RepoCache::RepoCache(const std::string& cache_dir, const std::string& repo_id)
    : cache_(cache_dir), root_(fs::path(cache_dir) / repo_folder_name(repo_id)), folder_(repo_folder_name(repo_id)) {}

fs::path RepoCache::blob(const std::string& etag) const { return root_ / "blobs" / etag; }
fs::path RepoCache::incomplete(const std::string& etag) const { return root_ / "blobs" / (etag + ".incomplete"); }
fs::path RepoCache::lock(const std::string& etag) const { return cache_ / ".locks" / folder_ / (etag + ".lock"); }
fs::path RepoCache::snapshot_dir(const std::string& commit) const { return root_ / "snapshots" / commit; }
fs::path RepoCache::snapshot_file(const std::string& commit, const std::string& file) const {
  return snapshot_dir(commit) / file;
}

std::optional<std::string> RepoCache::commit_of(const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  std::ifstream in(root_ / "refs" / revision);
  std::string commit;
  if (!in || !std::getline(in, commit) || commit.empty()) return std::nullopt;
  return commit;
}

Status RepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return {};
  const fs::path path = root_ / "refs" / revision;
  PLIMSOLL_TRY(make_parent(path));
  if (commit_of(revision) == commit) return {};
  const fs::path temp = temp_beside(path);
  {
    std::ofstream out(temp, std::ios::trunc);
    out << commit;
    if (!out) return make_error(ErrorCode::kIo, "cannot write " + temp.string() + ": " + std::strerror(errno));
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) return make_error(ErrorCode::kIo, "cannot write " + path.string() + ": " + ec.message());
  return {};
}

bool RepoCache::has_file(const std::string& commit, const std::string& file) const {
  std::error_code ec;
  return fs::is_regular_file(snapshot_file(commit, file), ec);
}

bool RepoCache::known_missing(const std::string& commit, const std::string& file) const {
  std::error_code ec;
  return fs::exists(root_ / ".no_exist" / commit / file, ec);
}

Status RepoCache::mark_missing(const std::string& commit, const std::string& file) const {
  const fs::path path = root_ / ".no_exist" / commit / file;
  PLIMSOLL_TRY(make_parent(path));
  std::ofstream out(path, std::ios::app);
  if (!out) return make_error(ErrorCode::kIo, "cannot write " + path.string() + ": " + std::strerror(errno));
  return {};
}

Status RepoCache::link(const std::string& commit, const std::string& file, const std::string& etag) const {
  const fs::path pointer = snapshot_file(commit, file);
  PLIMSOLL_TRY(make_parent(pointer));
  const fs::path temp = temp_beside(pointer);
  std::error_code ec;
  fs::remove(temp, ec);
  fs::create_symlink(blob(etag).lexically_relative(pointer.parent_path()), temp, ec);
  if (!ec) fs::rename(temp, pointer, ec);
  if (ec) return make_error(ErrorCode::kIo, "cannot link " + pointer.string() + ": " + ec.message());
  return {};
}

}  // namespace plimsoll::hub
