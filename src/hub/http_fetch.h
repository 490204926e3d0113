// HTTP for the hub (cpp-httplib; https through OpenSSL): HEAD for a file's
// metadata, following only relative redirects as huggingface_hub does, and a
// GET from a byte offset (Range) that hands the body to a sink as it arrives.
// The token goes only to the endpoint's own origin, never to a CDN.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/result.h"
#include "hub/hub_settings.h"

namespace plimsoll::hub {

// "https://host:port/a/b?x" -> {"https://host:port", "/a/b?x"}.
struct UrlParts {
  std::string origin;
  std::string target;
};
Result<UrlParts> split_url(const std::string& url);
// A Location header against the URL it answered: absolute, "//host/..", "/path" or "path".
std::string resolve_location(const std::string& base_url, const std::string& location);

// What the hub said about a file (its response headers).
struct HttpAnswer {
  int status = 0;
  std::string url;             // the URL that gave this answer
  std::string location;        // Location (absolute), on a redirect
  std::string commit;          // X-Repo-Commit
  std::string etag;            // X-Linked-Etag, else ETag; without W/ and quotes
  bool lfs = false;            // X-Linked-Etag was present (the etag is the sha256)
  int64_t size = -1;           // X-Linked-Size, else Content-Length
  std::string error_code;      // X-Error-Code (RepoNotFound, EntryNotFound, RevisionNotFound, GatedRepo)
  std::string error_message;   // X-Error-Message
};

// Receives a 2xx body. begin(status, range_start) comes first (status 206: the
// body starts at range_start, from Content-Range, -1 when absent; 200: at byte
// 0); returning false stops.
struct BodySink {
  std::function<bool(int status, int64_t range_start)> begin;
  std::function<bool(const char* data, size_t size)> write;
};

class HttpFetcher {
 public:
  explicit HttpFetcher(const HubSettings& settings);

  // Network failures are kUnavailable errors saying what happened and where.
  Result<HttpAnswer> head(const std::string& url) const;
  // GET from `offset` (Range: bytes=offset- when > 0), following redirects
  // (at most 10); a body cut short is a kUnavailable error.
  Result<HttpAnswer> get(const std::string& url, int64_t offset, const BodySink& sink) const;

 private:
  std::string endpoint_origin_;
  std::string token_;
  int timeout_seconds_;
};

}  // namespace plimsoll::hub
