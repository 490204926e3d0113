// CORS for browser clients, off unless --cors-allow-origin is set (TGI's flag):
// the allowed origins, the headers an answer gets, the preflight's answer.
#pragma once

#include <string>
#include <string_view>

#include "api/http_message.h"

namespace plimsoll::api {

// The Access-Control-Allow-Origin value for a request's Origin under
// `allow_list` ("*", or origins separated by commas), or "" when none applies
// (CORS off, no Origin, or an origin not in the list).
std::string cors_allowed_origin(std::string_view allow_list, std::string_view origin);

// Adds Access-Control-Allow-Origin (and Vary: Origin for a listed origin).
void add_cors_headers(HttpResponse& res, const std::string& allowed_origin);

// 204 to an OPTIONS preflight: the methods (GET, POST), the headers asked for
// (Access-Control-Request-Headers, else Authorization and Content-Type), 10 minutes.
HttpResponse cors_preflight(const HttpRequest& req, const std::string& allowed_origin);

}  // namespace plimsoll::api
