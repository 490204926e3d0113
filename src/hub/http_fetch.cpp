// HttpFetcher over cpp-httplib: one connection per request (a handful of
// files per model), redirects followed by hand so the hub's own headers
// (X-Repo-Commit, X-Linked-Etag) are seen and the token stays on its origin.
#include "hub/http_fetch.h"

#include <httplib.h>

#include <memory>

namespace plimsoll::hub {
namespace {

constexpr int kMaxRedirects = 10;

bool is_absolute(const std::string& location) {
  return location.find("://") != std::string::npos || location.rfind("//", 0) == 0;
}

std::string normalize_etag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

int64_t header_int(const httplib::Response& res, const char* name) {
  const std::string v = res.get_header_value(name);
  if (v.empty()) return -1;
  try {
    return std::stoll(v);
  } catch (...) {
    return -1;
  }
}

HttpAnswer answer_from(const httplib::Response& res, const std::string& url) {
  HttpAnswer a;
  a.status = res.status;
  a.url = url;
  const std::string location = res.get_header_value("Location");
  if (!location.empty()) a.location = resolve_location(url, location);
  a.commit = res.get_header_value("X-Repo-Commit");
  const std::string linked = res.get_header_value("X-Linked-Etag");
  a.lfs = !linked.empty();
  a.etag = normalize_etag(a.lfs ? linked : res.get_header_value("ETag"));
  a.size = header_int(res, "X-Linked-Size");
  if (a.size < 0) a.size = header_int(res, "Content-Length");
  a.error_code = res.get_header_value("X-Error-Code");
  a.error_message = res.get_header_value("X-Error-Message");
  return a;
}

// "bytes 100-2114/2115" -> 100; -1 when absent or malformed.
int64_t range_start(const std::string& content_range) {
  if (content_range.rfind("bytes ", 0) != 0) return -1;
  try {
    return std::stoll(content_range.substr(6));
  } catch (...) {
    return -1;
  }
}

Error network_error(httplib::Error error, const std::string& url) {
  std::string what;
  switch (error) {
    case httplib::Error::Connection: what = "cannot connect (connection refused or host unreachable)"; break;
    case httplib::Error::ConnectionTimeout: what = "connecting timed out"; break;
    case httplib::Error::Read: what = "the connection was closed or a read timed out"; break;
    case httplib::Error::Write: what = "the connection was closed while sending"; break;
    case httplib::Error::SSLConnection: what = "the TLS handshake failed"; break;
    case httplib::Error::SSLLoadingCerts: what = "cannot load the CA certificates (SSL_CERT_FILE, SSL_CERT_DIR)"; break;
    case httplib::Error::SSLServerVerification:
      what = "the server's TLS certificate failed verification (a private CA? set SSL_CERT_FILE to its certificate)";
      break;
    default: what = httplib::to_string(error); break;
  }
  return make_error(ErrorCode::kUnavailable, what + " (" + url + ")");
}

}  // namespace

Result<UrlParts> split_url(const std::string& url) {
  const size_t scheme = url.find("://");
  const std::string name = scheme == std::string::npos ? "" : url.substr(0, scheme);
  if (name != "http" && name != "https") {
    return make_error(ErrorCode::kInvalidArgument, "'" + url + "' is not an http:// or https:// URL");
  }
  const size_t path = url.find_first_of("/?", scheme + 3);
  UrlParts p;
  p.origin = url.substr(0, path);
  p.target = path == std::string::npos ? "/" : url.substr(path);
  if (p.target.front() == '?') p.target = std::string(1, '/').append(p.target);  // (not insert: GCC 12 -Wrestrict)
  return p;
}

std::string resolve_location(const std::string& base_url, const std::string& location) {
  if (location.find("://") != std::string::npos) return location;
  auto base = split_url(base_url);
  if (!base) return location;
  if (location.rfind("//", 0) == 0) return base_url.substr(0, base_url.find("://") + 1) + location;
  if (location.rfind('/', 0) == 0) return base->origin + location;
  const std::string path = base->target.substr(0, base->target.find('?'));
  return base->origin + path.substr(0, path.rfind('/') + 1) + location;
}

HttpFetcher::HttpFetcher(const HubSettings& settings)
    : token_(settings.token), timeout_seconds_(settings.timeout_seconds) {
  auto p = split_url(settings.endpoint);
  if (p) endpoint_origin_ = p->origin;
}

namespace {

std::unique_ptr<httplib::Client> make_client(const std::string& origin, int timeout_seconds) {
  auto client = std::make_unique<httplib::Client>(origin);
  client->set_connection_timeout(timeout_seconds);
  client->set_read_timeout(timeout_seconds);
  client->set_follow_location(false);
  client->set_decompress(false);
  return client;
}

httplib::Headers base_headers(const std::string& origin, const std::string& endpoint_origin,
                              const std::string& token) {
  httplib::Headers h = {{"Accept-Encoding", "identity"}, {"User-Agent", "plimsoll/0.1.0"}};
  if (!token.empty() && origin == endpoint_origin) h.emplace("Authorization", "Bearer " + token);
  return h;
}

Status check_scheme(const UrlParts& p) {
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
  if (p.origin.rfind("https://", 0) == 0) {
    return make_error(ErrorCode::kUnsupported, "this build has no HTTPS (cpp-httplib without OpenSSL): " + p.origin);
  }
#else
  (void)p;
#endif
  return {};
}

}  // namespace

Result<HttpAnswer> HttpFetcher::head(const std::string& url) const {
  std::string current = url;
  for (int hop = 0; hop <= kMaxRedirects; ++hop) {
    PLIMSOLL_ASSIGN(const UrlParts p, split_url(current));
    PLIMSOLL_TRY(check_scheme(p));
    auto client = make_client(p.origin, timeout_seconds_);
    auto res = client->Head(p.target, base_headers(p.origin, endpoint_origin_, token_));
    if (!res) return network_error(res.error(), current);
    HttpAnswer a = answer_from(*res, current);
    const std::string raw = res->get_header_value("Location");
    if (a.status / 100 != 3 || raw.empty() || is_absolute(raw)) return a;
    current = a.location;  // huggingface_hub follows relative redirects only (renamed repos)
  }
  return make_error(ErrorCode::kUnavailable, "more than " + std::to_string(kMaxRedirects) + " redirects from " + url);
}

Result<HttpAnswer> HttpFetcher::get(const std::string& url, int64_t offset, const BodySink& sink) const {
  std::string current = url;
  for (int hop = 0; hop <= kMaxRedirects; ++hop) {
    PLIMSOLL_ASSIGN(const UrlParts p, split_url(current));
    PLIMSOLL_TRY(check_scheme(p));
    auto client = make_client(p.origin, timeout_seconds_);
    httplib::Headers headers = base_headers(p.origin, endpoint_origin_, token_);
    if (offset > 0) headers.emplace("Range", "bytes=" + std::to_string(offset) + "-");
    HttpAnswer a;
    bool body = false, stopped = false;
    int64_t received = 0;
    auto res = client->Get(
        p.target, headers,
        [&](const httplib::Response& r) {
          a = answer_from(r, current);
          if (a.status / 100 != 2) return true;
          body = true;
          stopped = !sink.begin(a.status, range_start(r.get_header_value("Content-Range")));
          return !stopped;
        },
        [&](const char* data, size_t size) {
          if (!body) return true;  // an error page or a redirect's body
          received += static_cast<int64_t>(size);
          stopped = !sink.write(data, size);
          return !stopped;
        });
    if (stopped) return make_error(ErrorCode::kCancelled, "download stopped by the writer (" + current + ")");
    if (!res) {
      if (!body) return network_error(res.error(), current);
      return make_error(ErrorCode::kUnavailable, "the connection was cut after " + std::to_string(received) +
                                                     " bytes of the body (" + current + ")");
    }
    if (a.status / 100 != 3 || a.location.empty()) return a;
    current = a.location;
  }
  return make_error(ErrorCode::kUnavailable, "more than " + std::to_string(kMaxRedirects) + " redirects from " + url);
}

}  // namespace plimsoll::hub
