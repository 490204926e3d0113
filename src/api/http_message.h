// HttpRequest / HttpResponse: the plain HTTP messages the routes see, so no
// route depends on the transport (src/api/http_session.cpp, Boost.Beast).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/body_budget.h"

namespace plimsoll::api {

// Header fields in arrival order; names compare case-insensitively.
class HttpHeaders {
 public:
  void add(std::string name, std::string value);
  // Replaces every field of that name.
  void set(std::string name, std::string value);
  // The first value of `name`, or "" when absent.
  std::string get(std::string_view name) const;
  bool has(std::string_view name) const;
  size_t size() const { return fields_.size(); }
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

bool equals_ignoring_case(std::string_view a, std::string_view b);

struct HttpRequest {
  std::string method;   // "GET", "POST"...
  std::string path;     // the target before '?'
  std::string query;    // after '?', undecoded ("" when none)
  HttpHeaders headers;
  std::string body;
  BodyReservation body_reservation;  // this body's share of --max-body-bytes-in-flight
  // Set by the transport when the client closes its connection while a
  // worker runs the handler (a non-streamed generation then stops early).
  std::shared_ptr<std::atomic<bool>> client_gone = std::make_shared<std::atomic<bool>>(false);
  // The request's tenant, set by the transport once the head is read
  // (request_tenant); -1: not known yet (request_tenant works it out).
  int32_t tenant = -1;

  std::string header(std::string_view name) const { return headers.get(name); }
  // The route is done with the body (it is parsed into a validated call and
  // the JSON tree is gone): frees it and returns its reservation. The
  // transport calls it again when the handler returns.
  void release_body();
};

// A response whose body is produced over time (Server-Sent Events). The
// transport owns it once the handler returns; every call but wake's comes
// from one thread at a time.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // `wake` may be called from any thread when pull() may have more to give.
  virtual void set_wake(std::function<void()> wake) = 0;
  // What to write now, never blocking ("" for nothing yet). Sets *done when
  // the stream is over (the bytes returned are its last).
  virtual std::string pull(bool stopping, bool* done) = 0;
  // Called on a wake while a write is still pending (the reader is slow):
  // may cancel work that can no longer be delivered. Never blocks.
  virtual void on_stalled_wake() {}
  // Once, when the response is over; `completed`: every byte was written.
  virtual void close(bool completed) = 0;
};

struct HttpResponse {
  int status = 200;
  HttpHeaders headers;
  std::string content_type;  // "" with an empty body: no Content-Type
  std::string body;
  std::shared_ptr<ResponseStream> stream;  // set: a chunked body pulled from it (body unused)

  void set_header(std::string name, std::string value) { headers.set(std::move(name), std::move(value)); }
  std::string header(std::string_view name) const { return headers.get(name); }
  void set_content(std::string text, std::string type) {
    body = std::move(text);
    content_type = std::move(type);
  }
};

}  // namespace plimsoll::api
