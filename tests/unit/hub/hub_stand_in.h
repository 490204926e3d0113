// A loopback stand-in for the Hugging Face hub's file endpoints, serving the
// files of a folder as one repo the way huggingface.co answers:
//   HEAD/GET /{repo}/resolve/{revision}/{file}: 200 with ETag + X-Repo-Commit
//     for small files; 302 to /cdn/{sha256} with X-Linked-Etag/X-Linked-Size
//     for LFS files (*.safetensors); 401 / 404 with X-Error-Code as the hub sends;
//   GET /cdn/{sha256}: the bytes (Range honoured unless told to ignore it).
// Scripted faults: a required token, a cut after K bytes, a renamed repo (a
// relative 307), a server that ignores Range, a huge advertised size.
#pragma once

#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "../client/fake_server.h"
#include "core/sha256.h"

namespace plimsoll::testing {

struct StandInScript {
  std::string repo_id = "org/tiny";
  std::string renamed_from;           // e.g. "org/old": answers 307 to a relative URL under repo_id
  std::string commit = "0123456789abcdef0123456789abcdef01234567";
  std::string required_token;         // 401 unless "Authorization: Bearer <it>"
  int64_t cut_after = -1;             // the first CDN GET closes after this many bytes
  bool ignore_range = false;          // answer a Range with 200 and the whole file
  int64_t advertised_size = -1;       // X-Linked-Size instead of the real one
  bool gated = false;                 // 403 GatedRepo (terms not accepted)
  std::map<std::string, std::string> files;  // name -> bytes

  std::mutex mutex;
  std::vector<std::string> requests;  // "HEAD /org/tiny/resolve/main/config.json", "GET /cdn/..."
  std::vector<std::string> ranges;    // Range headers seen on CDN GETs ("" when none)
  std::vector<std::string> cdn_auth;  // Authorization headers seen on CDN GETs
  bool cut_done = false;

  size_t request_count() {
    std::lock_guard<std::mutex> lock(mutex);
    return requests.size();
  }
};

inline bool is_lfs(const std::string& file) { return file.size() > 12 && file.ends_with(".safetensors"); }

// Every file under `dir` (relative names).
inline std::map<std::string, std::string> read_folder(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    files[std::filesystem::relative(e.path(), dir).string()] = ss.str();
  }
  return files;
}

inline void hub_error(httplib::Response& res, int status, const std::string& code, const std::string& message) {
  res.status = status;
  if (!code.empty()) res.set_header("X-Error-Code", code);
  res.set_header("X-Error-Message", message);
  res.set_content("{\"error\": \"" + message + "\"}", "application/json");
}

inline void answer_resolve(StandInScript& s, const std::string& origin, const httplib::Request& req,
                           httplib::Response& res) {
  const std::string repo = req.matches[1], revision = req.matches[2], file = req.matches[3];
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.requests.push_back(req.method + " " + req.path);
  }
  if (!s.required_token.empty() && req.get_header_value("Authorization") != "Bearer " + s.required_token) {
    return hub_error(res, 401, "RepoNotFound", "Invalid credentials in Authorization header");
  }
  if (s.gated) return hub_error(res, 403, "GatedRepo", "Access to model org/tiny is restricted");
  if (!s.renamed_from.empty() && repo == s.renamed_from) {
    res.status = 307;
    res.set_header("Location", "/" + s.repo_id + "/resolve/" + revision + "/" + file);
    return;
  }
  if (repo != s.repo_id) return hub_error(res, 404, "RepoNotFound", "Repository not found");
  if (revision != "main" && revision != s.commit) return hub_error(res, 404, "RevisionNotFound", "Invalid rev id");
  auto it = s.files.find(file);
  if (it == s.files.end()) return hub_error(res, 404, "EntryNotFound", "Entry not found");
  const std::string sha = sha256_hex(it->second);
  res.set_header("X-Repo-Commit", s.commit);
  if (is_lfs(file)) {
    res.status = 302;
    res.set_header("X-Linked-Etag", "\"" + sha + "\"");
    const int64_t size = s.advertised_size >= 0 ? s.advertised_size : static_cast<int64_t>(it->second.size());
    res.set_header("X-Linked-Size", std::to_string(size));
    // The CDN is another host, as on huggingface.co: "localhost" for the same server.
    res.set_header("Location", origin.substr(0, origin.find("://")) + "://localhost:" +
                                   origin.substr(origin.rfind(':') + 1) + "/cdn/" + sha);
    return;
  }
  res.set_header("ETag", "W/\"" + sha.substr(0, 40) + "\"");
  res.set_content(it->second, "application/octet-stream");
}

inline void answer_cdn(StandInScript& s, const httplib::Request& req, httplib::Response& res) {
  const std::string sha = req.matches[1];
  const std::string* body = nullptr;
  for (const auto& [name, bytes] : s.files) {
    if (sha256_hex(bytes) == sha) body = &bytes;
  }
  bool cut = false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.requests.push_back(req.method + " " + req.path);
    s.ranges.push_back(req.get_header_value("Range"));
    s.cdn_auth.push_back(req.get_header_value("Authorization"));
    cut = s.cut_after >= 0 && !s.cut_done;
    if (cut) s.cut_done = true;
  }
  if (!body) return hub_error(res, 404, "", "no such blob");
  const std::string data = *body;
  const int64_t cut_at = s.cut_after;
  if (cut) {  // Content-Length of the whole file, then the connection closes after cut_at bytes
    res.set_content_provider(data.size(), "application/octet-stream",
                             [data, cut_at](size_t offset, size_t, httplib::DataSink& sink) {
                               if (static_cast<int64_t>(offset) >= cut_at) return false;
                               sink.write(data.data() + offset, static_cast<size_t>(cut_at) - offset);
                               return true;
                             });
  } else if (s.ignore_range) {  // chunked: httplib applies no Range, the whole file comes with 200
    res.status = 200;
    res.set_chunked_content_provider("application/octet-stream", [data](size_t offset, httplib::DataSink& sink) {
      if (offset < data.size()) sink.write(data.data() + offset, data.size() - offset);
      else sink.done();
      return true;
    });
  } else {
    res.set_content(data, "application/octet-stream");  // httplib answers a Range with 206
  }
}

// The stand-in on 127.0.0.1 (ephemeral port); `script` must outlive it.
// Plain HTTP, or HTTPS given a certificate and key (tls_files).
struct TlsFiles {
  std::string cert, key;
};

class HubStandIn {
 public:
  explicit HubStandIn(StandInScript& script, const TlsFiles& tls = {})
      : server_(tls.cert.empty() ? std::make_unique<httplib::Server>()
                                 : std::make_unique<httplib::SSLServer>(tls.cert.c_str(), tls.key.c_str()),
                tls.cert.empty() ? "http" : "https", [this, &script](httplib::Server& srv) {
          srv.Get(R"(/([^/]+/[^/]+)/resolve/([^/]+)/(.+))", [this, &script](const httplib::Request& req, httplib::Response& res) {
            answer_resolve(script, url(), req, res);
          });
          srv.Get(R"(/cdn/([0-9a-f]+))", [&script](const httplib::Request& req, httplib::Response& res) {
            answer_cdn(script, req, res);
          });
        }) {}

  std::string url() const { return server_.url(); }

 private:
  FakeServer server_;
};

}  // namespace plimsoll::testing
