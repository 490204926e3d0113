// ApiError and the one table from ErrorCode / Rejection to HTTP status,
// error_type and Retry-After; the TGI error body {"error","error_type"}.
#pragma once

#include <string>

#include "core/result.h"
#include "sched/generation_service.h"

namespace plimsoll::api {

struct HttpResponse;

struct ApiError {
  int status = 500;
  std::string error_type;        // TGI: validation, generation, overloaded, incomplete_generation...
  std::string message;
  int retry_after_seconds = 0;   // > 0: sent as Retry-After (429)
};

// The table:  kInvalidArgument, kOutOfMemory, kUnsupported -> 422 validation;
// kOverloaded -> 429 overloaded; kUnavailable -> 503 unavailable;
// kCancelled -> 500 incomplete_generation; kInternal -> 500 internal; anything else -> 424 generation.
ApiError api_error(const Error& error);
// As above, plus Retry-After = ceil(retry_after_seconds), at least 1, for 429.
ApiError api_error(const sched::Rejection& rejection);
ApiError validation_error(std::string message);
// The reason label of plimsoll_rejections_total for a refused submission.
const char* rejection_reason(ErrorCode code);

// {"error": message, "error_type": type}
std::string error_body(const ApiError& error);
// Status, JSON body and Retry-After on `res`.
void send_error(HttpResponse& res, const ApiError& error);

}  // namespace plimsoll::api
