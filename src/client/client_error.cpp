// Names and descriptions of client errors, and which kinds are worth a retry.
// The HTTP status -> kind table lives in wire.cpp beside the reply parsing.
#include "client/client_error.h"

#include <cmath>

namespace plimsoll::client {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kValidation: return "validation";
    case ErrorKind::kOverloaded: return "overloaded";
    case ErrorKind::kUnavailable: return "unavailable";
    case ErrorKind::kGeneration: return "generation";
    case ErrorKind::kHttp: return "http";
    case ErrorKind::kTransport: return "transport";
    case ErrorKind::kProtocol: return "protocol";
    case ErrorKind::kInput: return "input";
  }
  return "unknown";
}

bool ClientError::retryable() const {
  return kind == ErrorKind::kOverloaded || kind == ErrorKind::kUnavailable || kind == ErrorKind::kTransport;
}

std::string ClientError::describe() const {
  std::string out = error_kind_name(kind);
  if (http_status != 0) out += " (" + std::to_string(http_status) + ")";
  out += ": " + message;
  if (retry_after_seconds > 0) {
    out += ", retry after " + std::to_string(static_cast<int64_t>(std::ceil(retry_after_seconds))) + " s";
  }
  return out;
}

}  // namespace plimsoll::client
