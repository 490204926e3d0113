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

std::string error_body(const ApiError& error) {
  return dump_json({{"error", error.message}, {"error_type", error.error_type}});
}

void send_error(HttpResponse& res, const ApiError& error) {
  res.status = error.status;
  if (error.retry_after_seconds > 0) {
    res.set_header("Retry-After", std::to_string(error.retry_after_seconds));
  }
  res.set_content(error_body(error), "application/json");
}

}  // namespace plimsoll::api
