// ClientError (what went wrong talking to a server, by kind) and ClientResult<T>,
// the client's errors-as-values type; no exception leaves the client library.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace plimsoll::client {

enum class ErrorKind {
  kValidation,   // 422 (also 400, 413): this input is wrong; never retried
  kOverloaded,   // 429: fits, but not now; retried after Retry-After
  kUnavailable,  // 503 (also 502, 504): not ready or going away; retried
  kGeneration,   // 424 (also 500): the server failed while generating; not retried
  kHttp,         // any other status (401, 403, 404...): not retried
  kTransport,    // connection refused, reset or timed out; retried up to the deadline
  kProtocol,     // the server answered something that is not the wire format (bad JSON)
  kInput,        // a local problem: the input or output file, a bad input line
};

const char* error_kind_name(ErrorKind kind);

struct ClientError {
  ErrorKind kind = ErrorKind::kProtocol;
  std::string message;             // one line: the server's message or the local cause
  int http_status = 0;             // 0 when no HTTP answer arrived
  std::string error_type;          // the server's error_type, when it sent one
  double retry_after_seconds = 0;  // the Retry-After header; 0 = none

  // overloaded, unavailable and transport errors may succeed later.
  bool retryable() const;
  // "overloaded (429): queue full, retry after 1 s"
  std::string describe() const;
};

inline ClientError make_client_error(ErrorKind kind, std::string message) {
  return ClientError{kind, std::move(message)};
}

template <typename T>
class [[nodiscard]] ClientResult {
 public:
  ClientResult(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  ClientResult(ClientError error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const ClientError& error() const { assert(!ok()); return std::get<1>(v_); }

 private:
  std::variant<T, ClientError> v_;
};

// Success or a ClientError.
struct Done {};
using ClientStatus = ClientResult<Done>;

}  // namespace plimsoll::client
