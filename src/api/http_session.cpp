// One connection's life: read the head (one deadline for head + body), check
// the limits before any body byte, read the body charging its bytes to the
// body budget as they arrive (cutting the slowest bodies when it is short),
// run the handler (inline or on a worker), write the response or pump the
// stream, then keep alive or close (lingering when a body was left unread).
#include "api/http_session.h"

#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>

#include "api/cors.h"
#include "api/errors.h"
#include "api/http_wire.h"

namespace plimsoll::api {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using std::chrono::milliseconds;
using std::chrono::seconds;

// How long a connection closed with its body unread is drained (discarding)
// so the client can read our answer before the close resets it.
constexpr seconds kLingerTime{5};
// How often an idle stream is pulled anyway (stop, SSE keep-alive).
constexpr milliseconds kStreamTick{100};
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// When the body budget is short: how often a body retries its next step
// while the bodies cut for it close, and for how long before it gets 429.
constexpr milliseconds kRoomPoll{5};
constexpr milliseconds kRoomWait{1000};

using Clock = std::chrono::steady_clock;

// Wakes a stream's session from the engine thread; disabled when the stream ends.
class Waker {
 public:
  explicit Waker(std::function<void()> post) : post_(std::move(post)) {}
  void wake() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (post_) post_();
  }
  void disable() {
    std::lock_guard<std::mutex> lock(mutex_);
    post_ = nullptr;
  }

 private:
  std::mutex mutex_;
  std::function<void()> post_;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Transport& t)
      : t_(t), stream_(std::move(socket)),
        buffer_(static_cast<size_t>(t.config.max_header_bytes) + 8 * 1024),
        timer_(stream_.get_executor()) {}

  ~Session() {
    end_stream(false);
    end_active();
    if (reader_) t_.budget->end_reading(reader_);
    if (id_) t_.connections.remove(*id_);
  }

  void start(uint64_t id) {
    id_ = id;
    read_head();
  }

  // From any thread: closes the connection on its strand.
  void post_close() {
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->close_now(); });
  }

  // At the connection cap with nobody to evict: a 503 without waiting.
  void refuse_at_cap() {
    HttpResponse res;
    send_error(res, ApiError{503, "overloaded",
                             fmt::format("too many open connections: the limit is {} (--max-connections) and none "
                                         "is idle",
                                         t_.config.max_connections),
                             1});
    const std::string bytes = serialize_response(res, 11, false);
    beast::error_code ec;
    stream_.socket().non_blocking(true, ec);
    stream_.socket().write_some(net::buffer(bytes), ec);
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  }

 private:
  // --- reading -------------------------------------------------------------
  void read_head() {
    req_ = HttpRequest{};
    wire_ = ErrorWire::kTgi;
    cors_origin_.clear();
    body_unread_ = false;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(t_.config.max_header_bytes));
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());  // checked by us, before reading
    if (id_) t_.connections.set_reading(*id_, true);
    stream_.expires_after(seconds(t_.config.read_timeout_seconds));
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_head(ec); });
  }

  void on_head(beast::error_code ec) {
    if (closed_) return;
    if (id_) t_.connections.set_reading(*id_, false);
    if (ec) return on_head_error(ec);
    begin_active();
    const auto& h = parser_->get();
    version_ = h.version() == 10 ? 10 : 11;
    keep_alive_ = h.keep_alive();
    const auto fields = static_cast<int64_t>(std::distance(h.begin(), h.end()));
    head_at_ = Clock::now();
    const bool has_length = h.find(http::field::content_length) != h.end();
    const int64_t length = static_cast<int64_t>(parser_->content_length().value_or(0));
    body_unread_ = length > 0 || h.find(http::field::transfer_encoding) != h.end();
    wire_ = error_wire_for_path(std::string_view(h.target().data(), h.target().size()));
    if (fields > t_.config.max_header_fields) {
      return refuse({431, "validation",
                     fmt::format("too many header fields: {}, the limit is {} (--max-header-fields)", fields,
                                 t_.config.max_header_fields)});
    }
    if (h.find(http::field::transfer_encoding) != h.end()) return refuse(transfer_encoding_error());
    fill_request(h);
    cors_origin_ = cors_allowed_origin(t_.config.cors_allow_origin, req_.header("Origin"));
    if (req_.method == "OPTIONS" && !cors_origin_.empty()) {  // a preflight: no key, no body
      return write_response(cors_preflight(req_, cors_origin_));
    }
    route_ = t_.routes.find(req_.method, req_.path);
    if (!route_) return refuse({404, "not_found", "no route " + req_.method + " " + req_.path});
    if (route_->access == Access::kKey && !authorized(t_.config, req_)) {
      return refuse({401, "unauthorized", "missing or wrong `Authorization: Bearer` key"});
    }
    req_.tenant = request_tenant(t_.config, req_);
    if (route_->runs == Runs::kWorker && !serve_tenant()) return;  // (/health and the like answer at once)
    if (req_.method == "POST" && !has_length) {
      return refuse({411, "validation",
                     fmt::format("a POST needs a Content-Length (at most {} bytes)", t_.config.payload_limit_bytes)});
    }
    if (length > t_.config.payload_limit_bytes) {
      return refuse({413, "validation",
                     fmt::format("payload too large: the limit is {} bytes (--payload-limit)",
                                 t_.config.payload_limit_bytes)});
    }
    read_body(length, beast::iequals(h[http::field::expect], "100-continue"));
  }

  void on_head_error(beast::error_code ec) {
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      begin_active();
      return refuse({431, "validation",
                     fmt::format("request head too large: the limit is {} bytes (--max-header-bytes)",
                                 t_.config.max_header_bytes)});
    }
    if (ec == http::error::bad_transfer_encoding) {
      begin_active();
      body_unread_ = true;
      return refuse(transfer_encoding_error());
    }
    if (ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
        ec != http::error::end_of_stream) {
      begin_active();
      body_unread_ = true;
      return refuse({400, "validation", "malformed request head: " + ec.message()});
    }
    // The peer closed, the connection was closed (eviction, stop), or the
    // request deadline passed (beast::error::timeout: tcp_stream has closed
    // the socket, so a slow client gets a close, not a 408): nothing to answer.
  }

  // The request's tenant may keep one more connection busy (its share of
  // --max-connections): true; else answered 429.
  bool serve_tenant() {
    if (!id_) return true;
    const ConnectionRegistry::Served served = t_.connections.try_serve(*id_, tenant());
    if (served.ok) return true;
    t_.refusals.add(tenant());
    refuse({429, "overloaded",
            fmt::format("{} has {} connections being served and its share of the {} connections now is {} "
                        "(--max-connections; the other tenants' reserves are kept for them): retry later",
                        t_.tenants.label(req_.tenant), served.busy, t_.config.max_connections, served.limit),
            1});
    return false;
  }

  size_t tenant() const { return t_.tenants.index(req_.tenant); }

  ApiError transfer_encoding_error() const {
    return {411, "validation",
            fmt::format("Transfer-Encoding (chunked or any other) is not accepted on requests: send the body with "
                        "a Content-Length (at most {} bytes)",
                        t_.config.payload_limit_bytes)};
  }

  void fill_request(const http::request<http::empty_body>& h) {
    req_.method = h.method_string().to_string();
    const std::string_view target(h.target().data(), h.target().size());
    const size_t q = target.find('?');
    req_.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) req_.query = std::string(target.substr(q + 1));
    for (const auto& f : h) req_.headers.add(f.name_string().to_string(), f.value().to_string());
  }

  // --- the body: charged as it arrives ---------------------------------------
  // Nothing is reserved for the declared length. Each read lands in the
  // connection's own buffer (planned per connection); before its bytes move
  // into the body, the body's buffer grows (doubling from
  // kBodyFirstStepBytes, up to the length) with the new size reserved first,
  // the old one returned after the copy. A step that does not fit asks the
  // budget to cut slower bodies (make_room) and retries, else answers 429.
  void read_body(int64_t length, bool expects_continue) {
    body_length_ = length;
    received_ = 0;
    room_deadline_.reset();
    if (length == 0) return dispatch();
    req_.body_reservation = t_.budget->open(tenant());
    std::weak_ptr<Session> weak = shared_from_this();
    reader_ = t_.budget->begin_reading(head_at_, [weak, executor = stream_.get_executor()] {
      net::post(executor, [weak] {
        if (auto s = weak.lock()) s->cut_body();
      });
    }, tenant());
    const bool arrived = static_cast<int64_t>(buffer_.size()) >= length;
    if (!expects_continue || version_ == 10 || arrived) return take_body();
    net::async_write(stream_, net::buffer(kContinue), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (self->closed_ || ec) return self->abandon_body();
      self->take_body();
    });
  }

  // Moves what the buffer holds of the body into it, then reads more or dispatches.
  void take_body() {
    if (closed_) return abandon_body();
    const int64_t n = std::min(static_cast<int64_t>(buffer_.size()), body_length_ - received_);
    if (n > 0) {
      if (!body_room(received_ + n)) return;  // waiting for room, or refused
      net::buffer_copy(net::buffer(req_.body.data() + received_, static_cast<size_t>(n)), buffer_.data());
      buffer_.consume(static_cast<size_t>(n));
      received_ += n;
      t_.budget->note_progress(reader_, received_, req_.body_reservation.bytes());
    }
    if (received_ == body_length_) return body_read();
    read_more();
  }

  void read_more() {
    const size_t want = std::min(buffer_.max_size() - buffer_.size(), static_cast<size_t>(body_length_ - received_));
    // A body still arriving is evictable at the connection cap, ranked by
    // when its head began: 300 slow bodies cannot keep /health out.
    if (id_) t_.connections.set_reading(*id_, true, /*continues=*/true);
    stream_.async_read_some(buffer_.prepare(want), [self = shared_from_this()](beast::error_code ec, size_t n) {
      if (self->closed_) return self->abandon_body();
      if (self->id_) self->t_.connections.set_reading(*self->id_, false);
      if (ec) return self->abandon_body();  // the deadline or an eviction closed the socket, or the peer left
      self->buffer_.commit(n);
      self->take_body();
    });
  }

  // The body's buffer holds at least `need` bytes, charged: true; else a
  // retry is scheduled or the request refused.
  bool body_room(int64_t need) {
    const auto capacity = static_cast<int64_t>(req_.body.size());
    if (need <= capacity) return true;
    const int64_t grown = std::min(body_length_, std::max({need, 2 * capacity, kBodyFirstStepBytes}));
    // The old buffer lives until the copy is made: both are charged meanwhile.
    if (!req_.body_reservation.try_grow(grown)) {
      t_.budget->note_progress(reader_, need, req_.body_reservation.bytes());  // what arrived counts to its rate
      wait_for_room(grown, [](Session& s) { s.take_body(); });
      return false;
    }
    room_deadline_.reset();
    {
      std::string bigger(static_cast<size_t>(grown), '\0');
      std::memcpy(bigger.data(), req_.body.data(), static_cast<size_t>(received_));
      req_.body.swap(bigger);
    }
    req_.body_reservation.shrink(capacity);
    return true;
  }

  void body_read() {
    body_unread_ = false;
    room_deadline_.reset();
    end_reading();
    dispatch();
  }

  void end_reading() {
    if (reader_) t_.budget->end_reading(reader_);
    reader_ = 0;
  }

  // `bytes` did not fit: the budget cuts bodies slower than this one and
  // `retry` runs shortly; when none can make room, or room has not come
  // within kRoomWait, a 429.
  void wait_for_room(int64_t bytes, void (*retry)(Session&)) {
    const auto now = Clock::now();
    if (!room_deadline_) room_deadline_ = now + kRoomWait;
    if (now >= *room_deadline_ || t_.budget->make_room(bytes, reader_, now, tenant()) == BodyBudget::Room::kRefuse) {
      return refuse_body(bytes);
    }
    timer_.expires_after(kRoomPoll);
    timer_.async_wait([self = shared_from_this(), retry](beast::error_code) {
      if (self->closed_) return self->abandon_body();
      retry(*self);
    });
  }

  void refuse_body(int64_t bytes) {
    const int64_t held = req_.body_reservation.bytes();
    const int64_t used = t_.budget->used_bytes();
    const int64_t tenant_used = t_.budget->tenant_used_bytes(tenant());
    const int64_t tenant_limit = t_.budget->tenant_limit_bytes(tenant());
    abandon_body();
    req_.release_body();  // also a read body's, refused its tree
    if (t_.budget->tenants() > 1 && used + bytes <= t_.budget->total_bytes()) {  // the tenant's share, not the budget
      t_.refusals.add(tenant());
      return refuse({429, "overloaded",
                     fmt::format("{}'s request bodies in flight hold {} bytes and its share of the {}-byte budget "
                                 "(--max-body-bytes-in-flight) now is {}; none of its slower bodies holds enough to "
                                 "make room for the next {} bytes of this one ({} of {} bytes read, {} held)",
                                 t_.tenants.label(req_.tenant), tenant_used, t_.budget->total_bytes(), tenant_limit,
                                 bytes, received_, body_length_, held),
                     1});
    }
    refuse({429, "overloaded",
            fmt::format("request bodies in flight hold {} of the {}-byte budget (--max-body-bytes-in-flight) and no "
                        "slower body holds enough to make room for the next {} bytes of this one ({} of {} bytes "
                        "read, {} held)",
                        used, t_.budget->total_bytes(), bytes, received_, body_length_, held),
            1});
  }

  // Chosen by the budget (the slowest body when it was short): a 429 if the
  // socket takes it now, then closed; its bytes return as the session ends.
  void cut_body() {
    if (closed_ || !reader_) return;  // gone, or its body was read meanwhile
    HttpResponse res;
    send_error(res,
               ApiError{429, "overloaded",
                        fmt::format("this request's body arrived the slowest ({} of {} bytes) while the request "
                                    "body budget (--max-body-bytes-in-flight) was short: it was cut to make room",
                                    received_, body_length_),
                        1},
               wire_);
    const std::string bytes = serialize_response(res, version_, false);
    beast::error_code ec;
    stream_.socket().non_blocking(true, ec);
    stream_.socket().write_some(net::buffer(bytes), ec);
    close_now();
    abandon_body();
  }

  // The body will not be read: its reader ends and its bytes go back.
  void abandon_body() {
    if (!reader_) return;
    end_reading();
    req_.release_body();
  }

  // --- handling ------------------------------------------------------------
  void dispatch() {
    body_unread_ = false;
    if (route_->runs == Runs::kInline) {
      HttpResponse res;
      run_handler(*route_, req_, res);
      req_.release_body();
      return write_response(std::move(res));
    }
    auto self = shared_from_this();
    watch_client();
    const WorkerPool::PostResult posted = t_.workers.post(req_.tenant, [self] {
      HttpResponse res;
      run_handler(*self->route_, self->req_, res);
      self->req_.release_body();
      net::post(self->stream_.get_executor(),
                [self, res = std::move(res)]() mutable { self->write_response(std::move(res)); });
    });
    if (posted.outcome != WorkerPool::Posted::kQueued) {
      req_.release_body();
      stop_watching();
      refuse(worker_refusal(posted));
    }
  }

  ApiError worker_refusal(const WorkerPool::PostResult& posted) {
    if (posted.outcome == WorkerPool::Posted::kTenantFull) {
      t_.refusals.add(tenant());
      return {429, "overloaded",
              fmt::format("{} holds its share of the {} HTTP workers and {} waiting places: {} of its requests run "
                          "or wait and its share now is {} (--http-threads; the other tenants' reserves are kept "
                          "for them): retry later",
                          t_.tenants.label(req_.tenant), t_.workers.threads(), t_.workers.max_queued(), posted.held,
                          posted.limit),
              1};
    }
    return {503, "overloaded",
            fmt::format("all {} HTTP workers are busy and {} requests wait (--http-threads)", t_.workers.threads(),
                        t_.workers.max_queued()),
            1};
  }

  // While a worker runs the handler, a read on the socket notices the client
  // leaving (EOF or reset, as hyper and TGI treat it), so a non-streamed
  // generation stops instead of running to max_new_tokens for nobody. Bytes
  // that arrive (a pipelined request) are kept for the next head.
  //
  // One read at a time: a cancelled watch may complete (operation_aborted)
  // after the response is written, so the next request's read starts only from
  // the watch's own completion (resume_after_watch_), never beside it. Two reads
  // at once lost a request: the stale one took its bytes into buffer_ behind the
  // parser's back.
  void watch_client() {
    watching_ = true;
    stream_.expires_never();  // the request deadline covered the reading only
    stream_.async_read_some(net::buffer(drain_), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->on_watch_done(ec, n);
    });
  }

  void on_watch_done(beast::error_code ec, size_t n) {
    watching_ = false;
    if (closed_) return;
    if (!ec) {
      keep_pipelined(n);
    } else if (ec != net::error::operation_aborted) {
      req_.client_gone->store(true);
    }
    if (!resume_after_watch_) return;
    resume_after_watch_ = false;
    after_response();
  }

  // No other read is pending while watching_ (after_response waits for it), so
  // a second cancel before the watch completes finds nothing else to abort.
  void stop_watching() {
    if (!watching_) return;
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // the read ends with operation_aborted (or its bytes, if first)
  }

  void keep_pipelined(size_t n) {
    if (buffer_.max_size() - buffer_.size() < n) {
      keep_alive_ = false;  // more than a head ahead of its answer: close after it
      return;
    }
    buffer_.commit(net::buffer_copy(buffer_.prepare(n), net::buffer(drain_.data(), n)));
  }

  static void run_handler(const Route& route, HttpRequest& req, HttpResponse& res) {
    try {
      route.handler(req, res);
    } catch (...) {  // the route edge catches std::exception; anything else lands here
      res = HttpResponse{};
      send_error(res, ApiError{500, "internal", "the handler failed with an unknown exception"},
                 error_wire_for_path(req.path));
    }
  }

  // --- writing -------------------------------------------------------------
  void refuse(const ApiError& error) {
    HttpResponse res;
    send_error(res, error, wire_);
    keep_alive_ = false;
    write_response(std::move(res));
  }

  void write_response(HttpResponse res) {
    stop_watching();
    if (closed_) {
      if (res.stream) res.stream->close(false);
      return;
    }
    add_cors_headers(res, cors_origin_);
    if (res.stream) return start_stream(std::move(res));
    out_ = serialize_response(res, version_, keep_alive_);
    stream_.expires_after(seconds(t_.config.write_timeout_seconds));
    net::async_write(stream_, net::buffer(out_), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->out_.clear();
      self->out_.shrink_to_fit();
      self->end_active();
      if (ec || self->closed_) return;
      self->after_response();
    });
  }

  void after_response() {
    if (body_unread_) return linger();
    if (!keep_alive_) {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      return;
    }
    if (watching_) {  // the cancelled watch has not completed yet: it starts the next read
      resume_after_watch_ = true;
      return;
    }
    read_head();
  }

  // Our side is done; read and discard until the client closes or kLingerTime.
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    if (id_) t_.connections.set_reading(*id_, true);  // evictable
    stream_.expires_after(kLingerTime);
    drain();
  }

  void drain() {
    stream_.async_read_some(net::buffer(drain_), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (!ec && !self->closed_) self->drain();
    });
  }

  // --- streaming -----------------------------------------------------------
  void start_stream(HttpResponse res) {
    source_ = std::move(res.stream);
    if (version_ == 10) keep_alive_ = false;  // no chunked framing: the body ends at close
    beast::error_code ignored;
    stream_.socket().set_option(tcp::no_delay(true), ignored);
    std::weak_ptr<Session> weak = shared_from_this();
    auto executor = stream_.get_executor();
    waker_ = std::make_shared<Waker>([weak, executor] {
      net::post(executor, [weak] {
        if (auto s = weak.lock()) s->on_wake();
      });
    });
    source_->set_wake([waker = waker_] { waker->wake(); });
    write_stream(stream_head(res, version_, keep_alive_), false);
  }

  void on_wake() {
    if (writing_ && source_) return source_->on_stalled_wake();
    timer_.cancel();  // the idle wait ends: pump() pulls
  }

  void pump() {
    if (writing_ || !source_ || closed_) return;
    bool done = false;
    std::string frames = source_->pull(t_.ctx.stopping.load(), &done);
    if (frames.empty() && !done) {
      timer_.expires_after(std::min(kStreamTick, milliseconds(std::max(1, t_.config.sse_keepalive_ms))));
      timer_.async_wait([self = shared_from_this()](beast::error_code) { self->pump(); });
      return;
    }
    std::string bytes = version_ == 10 ? std::move(frames) : chunk(frames, done);
    write_stream(std::move(bytes), done);
  }

  void write_stream(std::string bytes, bool done) {
    out_ = std::move(bytes);
    writing_ = true;
    stream_.expires_after(seconds(t_.config.write_timeout_seconds));
    net::async_write(stream_, net::buffer(out_), [self = shared_from_this(), done](beast::error_code ec, size_t) {
      self->writing_ = false;
      self->out_.clear();
      if (ec || self->closed_) return self->end_stream(false);
      if (!done) return self->pump();
      self->end_stream(true);
      self->end_active();
      self->after_response();
    });
  }

  void end_stream(bool completed) {
    if (waker_) waker_->disable();
    waker_.reset();
    if (source_) source_->close(completed);
    source_.reset();
  }

  // --- bookkeeping ---------------------------------------------------------
  void begin_active() {
    if (!active_) t_.active_requests.fetch_add(1);
    active_ = true;
  }
  void end_active() {
    if (active_) t_.active_requests.fetch_sub(1);
    active_ = false;
  }

  void close_now() {
    closed_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    timer_.cancel();
  }

  Transport& t_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  net::steady_timer timer_;
  std::optional<uint64_t> id_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  HttpRequest req_;
  Clock::time_point head_at_;                     // when this request's head was read
  int64_t body_length_ = 0;                       // its Content-Length
  int64_t received_ = 0;                          // body bytes moved into req_.body (charged)
  uint64_t reader_ = 0;                           // its BodyBudget reader while the body is read (0: none)
  std::optional<Clock::time_point> room_deadline_;  // waiting for the budget: 429 from then
  const Route* route_ = nullptr;
  unsigned version_ = 11;
  ErrorWire wire_ = ErrorWire::kTgi;  // the error body this request's route speaks
  std::string cors_origin_;           // Access-Control-Allow-Origin for this request ("" none)
  bool keep_alive_ = false;
  bool body_unread_ = false;
  bool active_ = false;
  bool closed_ = false;
  bool writing_ = false;
  bool watching_ = false;            // watch_client's read is pending
  bool resume_after_watch_ = false;  // the response is written: read the next head when the watch ends
  std::string out_;
  std::array<char, 4096> drain_{};
  std::shared_ptr<ResponseStream> source_;
  std::shared_ptr<Waker> waker_;
};

}  // namespace

void serve_connection(tcp::socket socket, Transport& transport) {
  auto session = std::make_shared<Session>(std::move(socket), transport);
  std::weak_ptr<Session> weak = session;
  std::optional<uint64_t> id = transport.connections.admit([weak] {
    if (auto s = weak.lock()) s->post_close();
  });
  if (!id) return session->refuse_at_cap();
  session->start(*id);
}

}  // namespace plimsoll::api
