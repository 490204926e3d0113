// A webhook connection's life: handshake (deadline), then per request: read
// head and body whole (deadline; body limit: 413), answer from the route
// table (404 otherwise), write (deadline), keep alive or shut TLS down.
#include "webhook/webhook_session.h"

#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "api/http_wire.h"
#include "webhook/admission_review.h"

namespace plimsoll::webhook {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using std::chrono::seconds;

// How long a closing connection waits for the peer's TLS close_notify.
constexpr seconds kShutdownTime{2};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, SessionShared& shared) : s_(shared), stream_(std::move(socket), shared.tls) {}

  void start() {
    lowest().expires_after(seconds(s_.read_timeout_seconds));
    stream_.async_handshake(ssl::stream_base::server, [self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->read();
    });
  }

 private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void read() {
    parser_.emplace();
    parser_->body_limit(static_cast<std::uint64_t>(s_.payload_limit_bytes));
    lowest().expires_after(seconds(s_.read_timeout_seconds));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::body_limit) return refuse(413, "payload too large");
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      return refuse(431, "request head too large");
    }
    if (ec && ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
        ec != http::error::end_of_stream) {
      return refuse(400, "malformed request: " + ec.message());
    }
    if (ec) return;  // the peer left, or the deadline passed (the socket is closed)
    s_.active.fetch_add(1);
    const auto& m = parser_->get();
    keep_alive_ = m.keep_alive();
    version_ = m.version() == 10 ? 10 : 11;
    api::HttpRequest req = request_of(parser_->release());
    api::HttpResponse res;
    const api::Route* route = s_.routes.find(req.method, req.path);
    if (route) {
      route->handler(req, res);
    } else {
      res.status = 404;
      res.set_content(error_json("no route " + req.method + " " + req.path), "application/json");
    }
    write(std::move(res));
  }

  static api::HttpRequest request_of(http::request<http::string_body> m) {
    api::HttpRequest req;
    req.method = std::string(m.method_string());
    const std::string_view target(m.target().data(), m.target().size());
    const size_t q = target.find('?');
    req.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) req.query = std::string(target.substr(q + 1));
    for (const auto& f : m) req.headers.add(std::string(f.name_string()), std::string(f.value()));
    req.body = std::move(m.body());
    return req;
  }

  // A request that cannot be read: answered, then the connection closes.
  void refuse(int status, const std::string& what) {
    s_.active.fetch_add(1);
    keep_alive_ = false;
    api::HttpResponse res;
    res.status = status;
    res.set_content(error_json(what), "application/json");
    write(std::move(res));
  }

  void write(api::HttpResponse res) {
    out_ = api::serialize_response(res, version_, keep_alive_);
    lowest().expires_after(seconds(s_.write_timeout_seconds));
    net::async_write(stream_, net::buffer(out_), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->s_.active.fetch_sub(1);
      self->out_.clear();
      if (ec) return;
      if (self->keep_alive_) return self->read();
      self->shut_down();
    });
  }

  void shut_down() {
    lowest().expires_after(kShutdownTime);
    stream_.async_shutdown([self = shared_from_this()](beast::error_code) {
      beast::error_code ignored;
      self->lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
      self->lowest().close();
    });
  }

  SessionShared& s_;
  beast::ssl_stream<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string out_;
  unsigned version_ = 11;
  bool keep_alive_ = false;
};

}  // namespace

void serve_tls_connection(tcp::socket socket, SessionShared& shared) {
  std::make_shared<Session>(std::move(socket), shared)->start();
}

}  // namespace plimsoll::webhook
