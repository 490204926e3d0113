// ApiError and the one table from ErrorCode / Rejection to HTTP status,
// error_type and Retry-After; the TGI error body {"error","error_type"} and,
// on every /v1/ path, OpenAI's {"error":{"message","type","param","code"}}.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"
#include "sched/generation_service.h"

namespace plimsoll::api {

struct HttpResponse;

struct ApiError {
  int status = 500;
  std::string error_type;        // TGI: validation, generation, overloaded, incomplete_generation...
  std::string message;
  int retry_after_seconds = 0;   // > 0: sent as Retry-After (429)
  std::string code;              // OpenAI's `code` ("" -> null; e.g. "invalid_api_key", "model_not_found")
};

// Which error body an answer carries: TGI's, or OpenAI's on /v1/ routes
// (there a 422 is sent as 400, as OpenAI and vLLM do).
enum class ErrorWire { kTgi, kOpenAi };
ErrorWire error_wire_for_path(std::string_view path);

// The table:  kInvalidArgument, kOutOfMemory, kUnsupported -> 422 validation;
// kOverloaded -> 429 overloaded; kUnavailable -> 503 unavailable;
// kCancelled -> 500 incomplete_generation; kInternal -> 500 internal; anything else -> 424 generation.
ApiError api_error(const Error& error);
// As above, plus Retry-After = ceil(retry_after_seconds), at least 1, for 429.
ApiError api_error(const sched::Rejection& rejection);
ApiError validation_error(std::string message);
// The reason label of plimsoll_rejections_total for a refused submission.
const char* rejection_reason(ErrorCode code);

// TGI: {"error": message, "error_type": type}. OpenAI: {"error": {"message",
// "type" (invalid_request_error | rate_limit_exceeded | server_error),
// "param" (the first `field` the message names, else null), "code"}}.
std::string error_body(const ApiError& error, ErrorWire wire = ErrorWire::kTgi);
// The status sent: OpenAI's 400 for a 422.
int wire_status(const ApiError& error, ErrorWire wire);
// Status, JSON body and Retry-After on `res`.
void send_error(HttpResponse& res, const ApiError& error, ErrorWire wire = ErrorWire::kTgi);

}  // namespace plimsoll::api
