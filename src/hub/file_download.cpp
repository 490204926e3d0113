// FileDownloader: metadata, the cache's blob, resume, checks, link.
#include "hub/file_download.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/bytes.h"
#include "hub/hub_error.h"
#include "hub/repo_ref.h"
#include "core/sha256.h"

namespace fs = std::filesystem;

namespace plimsoll::hub {
namespace {

std::string quote(const std::string& s, bool keep_slash) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// An etag or commit names a file or folder in the cache: letters, digits, '-',
// '_' only (git and LFS hashes are hex), so a hostile answer cannot leave the cache.
bool safe_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (unsigned char c : name) {
    if (!std::isalnum(c) && c != '-' && c != '_') return false;
  }
  return true;
}

// flock() on the blob's lock file for as long as this lives.
class BlobLock {
 public:
  static Result<std::unique_ptr<BlobLock>> acquire(const fs::path& path) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) {
      const std::string why = std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return make_error(ErrorCode::kIo, "cannot lock " + path.string() + ": " + why);
    }
    return std::unique_ptr<BlobLock>(new BlobLock(fd));
  }
  ~BlobLock() { ::close(fd_); }
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;

 private:
  explicit BlobLock(int fd) : fd_(fd) {}
  int fd_;
};

int64_t size_or_zero(const fs::path& path) {
  std::error_code ec;
  const auto n = fs::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

Status check_space(const fs::path& dir, int64_t needed, const FileRef& ref) {
  std::error_code ec;
  const fs::space_info space = fs::space(dir, ec);
  if (ec || needed <= 0 || static_cast<int64_t>(space.available) >= needed) return {};
  return make_error(ErrorCode::kIo, file_context(ref) + "not enough disk space: needs " + format_bytes(needed) +
                                        " more, " + format_bytes(static_cast<int64_t>(space.available)) +
                                        " free in " + dir.string() +
                                        " (free some, or set HF_HUB_CACHE to a larger disk)");
}

Error write_failure(const FileRef& ref, const fs::path& part, const std::string& why) {
  return make_error(ErrorCode::kIo, file_context(ref) + "cannot write " + part.string() + ": " + why +
                                        " (disk full? free some space and re-run to resume)");
}

}  // namespace

std::string resolve_url(const std::string& endpoint, const std::string& repo_id, const std::string& revision,
                        const std::string& file) {
  return endpoint + "/" + repo_id + "/resolve/" + quote(revision, false) + "/" + quote(file, true);
}

FileDownloader::FileDownloader(const HubSettings& settings, const std::string& repo_id, DownloadProgress& progress)
    : settings_(settings), repo_id_(repo_id), cache_(settings.cache_dir, repo_id), http_(settings),
      progress_(progress) {}

Result<std::string> FileDownloader::fetch(const std::string& revision, const std::string& file) {
  const FileRef ref{repo_id_, revision, file, !settings_.token.empty()};
  if (is_commit_hash(revision) && cache_.has_file(revision, file)) return revision;
  auto head = http_.head(resolve_url(settings_.endpoint, repo_id_, revision, file));
  if (!head) return network_failure(head.error(), ref, false);
  HttpAnswer meta = std::move(head).value();
  const int kind = meta.status / 100;
  if (kind != 2 && kind != 3) return answer_error(meta, ref);
  if (kind == 2) meta.location = meta.url;
  if (!safe_name(meta.commit) || !safe_name(meta.etag) || meta.location.empty()) {
    return make_error(ErrorCode::kInvalidFile,
                      file_context(ref) + "the answer lacks X-Repo-Commit, a usable ETag or a Location: is HF_ENDPOINT (" +
                          settings_.endpoint + ") a Hugging Face hub?");
  }
  if (cache_.has_file(meta.commit, file)) return meta.commit;
  std::error_code ec;
  if (!fs::exists(cache_.blob(meta.etag), ec)) PLIMSOLL_TRY(download_blob(meta, ref));
  PLIMSOLL_TRY(cache_.link(meta.commit, file, meta.etag));
  return meta.commit;
}

Status FileDownloader::download_blob(const HttpAnswer& meta, const FileRef& ref) {
  const fs::path blob = cache_.blob(meta.etag), part = cache_.incomplete(meta.etag);
  std::error_code ec;
  fs::create_directories(blob.parent_path(), ec);
  if (ec) return make_error(ErrorCode::kIo, "cannot create " + blob.parent_path().string() + ": " + ec.message());
  PLIMSOLL_ASSIGN(auto lock, BlobLock::acquire(cache_.lock(meta.etag)));
  if (fs::exists(blob, ec)) return {};  // another process finished it while we waited
  for (int attempt = 0;; ++attempt) {
    int64_t offset = size_or_zero(part);
    if (meta.size >= 0 && offset > meta.size) {
      fs::remove(part, ec);
      offset = 0;
    }
    if (meta.size >= 0) PLIMSOLL_TRY(check_space(blob.parent_path(), meta.size - offset, ref));
    std::unique_ptr<std::FILE, decltype(&std::fclose)> out(std::fopen(part.c_str(), "ab"), &std::fclose);
    if (!out) return write_failure(ref, part, std::strerror(errno));
    std::string write_error, range_error;
    BodySink sink;
    sink.begin = [&](int status, int64_t start) {
      if (status == 206 && start != offset) {
        range_error = "the server resumed at byte " + std::to_string(start) + ", not " + std::to_string(offset);
        return false;
      }
      if (status == 200 && offset > 0) {  // the server ignored Range: start over
        if (::ftruncate(fileno(out.get()), 0) != 0) write_error = std::strerror(errno);
        offset = 0;
      }
      progress_.start(repo_id_ + " " + ref.file, meta.size, offset);
      return write_error.empty();
    };
    sink.write = [&](const char* data, size_t n) {
      if (std::fwrite(data, 1, n, out.get()) != n) write_error = std::strerror(errno);
      progress_.add(static_cast<int64_t>(n));
      return write_error.empty();
    };
    auto got = http_.get(meta.location, offset, sink);
    if (std::fflush(out.get()) != 0 && write_error.empty()) write_error = std::strerror(errno);
    out.reset();
    if (!write_error.empty()) return write_failure(ref, part, write_error);
    if (!range_error.empty()) {
      fs::remove(part, ec);
      return make_error(ErrorCode::kUnavailable, file_context(ref) + range_error + "; the partial file was removed: re-run");
    }
    if (!got) return network_failure(got.error(), ref, size_or_zero(part) > 0);
    if (got->status == 416 && attempt == 0) {  // what we kept does not fit the file: start over once
      fs::remove(part, ec);
      continue;
    }
    if (got->status / 100 != 2) return answer_error(*got, ref);
    progress_.finish();
    const int64_t have = size_or_zero(part);
    if (meta.size >= 0 && have != meta.size) {
      if (have > meta.size) fs::remove(part, ec);
      return make_error(ErrorCode::kUnavailable,
                        file_context(ref) + "received " + std::to_string(have) + " of " + std::to_string(meta.size) +
                            " bytes" + (have < meta.size ? "; re-run the command to resume the download" : "; removed"));
    }
    if (meta.lfs && meta.etag.size() == 64) {
      PLIMSOLL_ASSIGN(const std::string sha, sha256_file(part.string()));
      if (sha != meta.etag) {
        fs::remove(part, ec);
        return make_error(ErrorCode::kInvalidFile, file_context(ref) + "sha256 " + sha + " does not match the hub's " +
                                                       meta.etag + "; the download was removed: re-run");
      }
    }
    fs::rename(part, blob, ec);
    if (ec) return write_failure(ref, blob, ec.message());
    return {};
  }
}

}  // namespace plimsoll::hub
