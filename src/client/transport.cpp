// Transport over cpp-httplib: a pool of keep-alive clients (a connection that
// failed is dropped, not reused), httplib errors -> transport ClientErrors.
#include "client/transport.h"

#include <httplib.h>

namespace plimsoll::client {
namespace {

// "http://host:port/prefix" -> {"http://host:port", "/prefix"}.
std::pair<std::string, std::string> split_base_url(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (path == std::string::npos) return {url, ""};
  std::string prefix = url.substr(path);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return {url.substr(0, path), prefix};
}

ClientError transport_error(httplib::Error error, const std::string& url) {
  std::string what = httplib::to_string(error);
  switch (error) {
    case httplib::Error::Connection: what = "connection refused or unreachable"; break;
    case httplib::Error::Read: what = "connection closed or read timed out"; break;
    case httplib::Error::Write: what = "connection closed while sending"; break;
    case httplib::Error::ConnectionTimeout: what = "connect timed out"; break;
    default: break;
  }
  return make_client_error(ErrorKind::kTransport, what + " (" + url + ")");
}

wire::HttpReply reply_from(const httplib::Response& res) {
  wire::HttpReply reply;
  reply.status = res.status;
  reply.body = res.body;
  reply.retry_after = res.get_header_value("Retry-After");
  reply.generated_tokens = res.get_header_value("x-generated-tokens");
  return reply;
}

}  // namespace

Transport::Transport(std::string base_url, ClientOptions options)
    : base_url_(std::move(base_url)), options_(std::move(options)) {}

Transport::~Transport() = default;

std::unique_ptr<httplib::Client> Transport::acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<httplib::Client> connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
  }
  auto connection = std::make_unique<httplib::Client>(split_base_url(base_url_).first);
  auto set = [](int64_t ms, auto&& setter) { setter(ms / 1000, (ms % 1000) * 1000); };
  set(options_.connect_timeout_ms, [&](time_t s, time_t us) { connection->set_connection_timeout(s, us); });
  set(options_.read_timeout_ms, [&](time_t s, time_t us) { connection->set_read_timeout(s, us); });
  set(options_.write_timeout_ms, [&](time_t s, time_t us) { connection->set_write_timeout(s, us); });
  connection->set_keep_alive(true);
  connection->set_tcp_nodelay(true);
  if (!options_.api_key.empty()) connection->set_bearer_token_auth(options_.api_key);
  return connection;
}

void Transport::release(std::unique_ptr<httplib::Client> connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(std::move(connection));
}

ClientResult<wire::HttpReply> Transport::get(const std::string& path) {
  std::unique_ptr<httplib::Client> connection = acquire();
  if (!connection->is_valid()) return make_client_error(ErrorKind::kInput, "bad server URL: " + base_url_);
  httplib::Result res = connection->Get(split_base_url(base_url_).second + path);
  if (!res) return transport_error(res.error(), base_url_ + path);
  wire::HttpReply reply = reply_from(*res);
  release(std::move(connection));
  return reply;
}

ClientResult<wire::HttpReply> Transport::post_json(const std::string& path, const std::string& body) {
  std::unique_ptr<httplib::Client> connection = acquire();
  if (!connection->is_valid()) return make_client_error(ErrorKind::kInput, "bad server URL: " + base_url_);
  httplib::Result res = connection->Post(split_base_url(base_url_).second + path, body, "application/json");
  if (!res) return transport_error(res.error(), base_url_ + path);
  wire::HttpReply reply = reply_from(*res);
  release(std::move(connection));
  return reply;
}

ClientResult<wire::HttpReply> Transport::post_stream(const std::string& path, const std::string& body,
                                                     const std::function<bool(std::string_view)>& on_bytes) {
  std::unique_ptr<httplib::Client> connection = acquire();
  if (!connection->is_valid()) return make_client_error(ErrorKind::kInput, "bad server URL: " + base_url_);
  httplib::Request req;
  req.method = "POST";
  req.path = split_base_url(base_url_).second + path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");
  int status = 0;
  bool stopped = false;
  std::string error_body;
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    if (status < 200 || status >= 300) {
      error_body.append(data, size);
      return true;
    }
    stopped = !on_bytes(std::string_view(data, size));
    return !stopped;
  };
  httplib::Result res = connection->send(req);
  if (!res && !(stopped && res.error() == httplib::Error::Canceled)) {
    return transport_error(res.error(), base_url_ + path);
  }
  wire::HttpReply reply;
  reply.status = status;
  reply.body = std::move(error_body);
  if (res) reply.retry_after = res->get_header_value("Retry-After");
  if (!stopped) release(std::move(connection));
  return reply;
}

}  // namespace plimsoll::client
