// The error table (ErrorCode -> status, error_type) and how an ApiError is
// written: JSON body, status, Retry-After.
#include "api/errors.h"

#include <cmath>

#include "api/http_message.h"
#include "api/json_text.h"

namespace plimsoll::api {

ApiError api_error(const Error& error) {
  switch (error.code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kOutOfMemory:
    case ErrorCode::kUnsupported:
      return {422, "validation", error.message};
    case ErrorCode::kOverloaded:
      return {429, "overloaded", error.message, 1};
    case ErrorCode::kUnavailable:
      return {503, "unavailable", error.message};
    case ErrorCode::kCancelled:
      return {500, "incomplete_generation", error.message};
    case ErrorCode::kInternal:  // a fault contained on the engine thread (sched/fault.h)
      return {500, "internal", error.message};
    case ErrorCode::kInvalidFile:
    case ErrorCode::kNotFound:
    case ErrorCode::kIo:
      break;
  }
  return {424, "generation", error.message};
}

ApiError api_error(const sched::Rejection& rejection) {
  ApiError e = api_error(rejection.error);
  if (e.status == 429) {
    double seconds = std::ceil(rejection.retry_after_seconds);
    e.retry_after_seconds = seconds >= 1 && seconds < 86400 ? static_cast<int>(seconds) : 1;
  }
  return e;
}

ApiError validation_error(std::string message) { return {422, "validation", std::move(message)}; }

const char* rejection_reason(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOverloaded: return "overloaded";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kOutOfMemory: return "memory";
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kUnsupported: return "validation";
    default: return "other";
  }
}

ErrorWire error_wire_for_path(std::string_view path) {
  return path.starts_with("/v1/") || path == "/v1" ? ErrorWire::kOpenAi : ErrorWire::kTgi;
}

int wire_status(const ApiError& error, ErrorWire wire) {
  return wire == ErrorWire::kOpenAi && error.status == 422 ? 400 : error.status;
}

namespace {

// The first `name` a message quotes: the field it is about.
json param_of(const std::string& message) {
  const size_t open = message.find('`');
  if (open == std::string::npos) return nullptr;
  const size_t close = message.find('`', open + 1);
  if (close == std::string::npos || close == open + 1) return nullptr;
  return message.substr(open + 1, close - open - 1);
}

const char* openai_type(int status) {
  if (status == 429) return "rate_limit_exceeded";
  if (status >= 500 || status == 424) return "server_error";
  return "invalid_request_error";
}

json openai_code(const ApiError& error) {
  if (!error.code.empty()) return error.code;
  if (error.status == 401) return "invalid_api_key";
  if (error.status == 429) return "rate_limit_exceeded";
  return nullptr;
}

}  // namespace

std::string error_body(const ApiError& error, ErrorWire wire) {
  if (wire == ErrorWire::kOpenAi) {
    return dump_json({{"error",
                       {{"message", error.message},
                        {"type", openai_type(wire_status(error, wire))},
                        {"param", param_of(error.message)},
                        {"code", openai_code(error)}}}});
  }
  return dump_json({{"error", error.message}, {"error_type", error.error_type}});
}

void send_error(HttpResponse& res, const ApiError& error, ErrorWire wire) {
  res.status = wire_status(error, wire);
  if (error.retry_after_seconds > 0) {
    res.set_header("Retry-After", std::to_string(error.retry_after_seconds));
  }
  res.set_content(error_body(error, wire), "application/json");
}

}  // namespace plimsoll::api
