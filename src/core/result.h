// Errors as values: Error (a code and a one-line message) and Result<T>.
// Every fallible call across a module boundary returns one of these.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace plimsoll {

enum class ErrorCode {
  kInvalidArgument,  // the caller passed something wrong (a flag, a parameter)
  kInvalidFile,      // a file is truncated, corrupt, hostile or of the wrong kind
  kNotFound,         // a file, tensor or key is missing
  kUnsupported,      // valid, but a feature we do not implement (say which)
  kIo,               // the operating system refused (open, read, mmap)
  kOutOfMemory,      // can never fit the memory plan (HTTP 422 with the numbers)
  kOverloaded,       // fits, but not now: the queue is full (HTTP 429 + Retry-After)
  kUnavailable,      // not ready, or shutting down (HTTP 503)
  kCancelled,        // the client went away or the request was aborted
  kInternal,         // a bug: an invariant did not hold
};

const char* error_code_name(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;  // one line, names the file / field / limit involved

  // "<context>: <message>", for adding the file name or step at a higher layer.
  Error with_context(const std::string& context) const {
    return Error{code, context + ": " + message};
  }
};

inline Error make_error(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}      // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  static Status ok_status() { return Status(); }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { assert(!ok_); return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace plimsoll

// Early return of the error of a Result/Status expression.
#define PLIMSOLL_TRY(expr)                          \
  do {                                              \
    auto&& plimsoll_try_ = (expr);                  \
    if (!plimsoll_try_.ok()) return plimsoll_try_.error(); \
  } while (0)

#define PLIMSOLL_CONCAT_INNER(a, b) a##b
#define PLIMSOLL_CONCAT(a, b) PLIMSOLL_CONCAT_INNER(a, b)
// PLIMSOLL_ASSIGN(auto x, f()); declares x from a Result or returns its error.
#define PLIMSOLL_ASSIGN(decl, expr) \
  PLIMSOLL_ASSIGN_IMPL(PLIMSOLL_CONCAT(plimsoll_res_, __LINE__), decl, expr)
#define PLIMSOLL_ASSIGN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.error();          \
  decl = std::move(tmp).value()
