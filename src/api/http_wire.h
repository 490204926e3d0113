// HTTP/1.x response bytes for the transport: a whole response, a stream's
// head, and chunked framing.
#pragma once

#include <string>
#include <string_view>

#include "api/http_message.h"

namespace plimsoll::api {

// `version`: 10 or 11. Moves res.body into the result.
std::string serialize_response(HttpResponse& res, unsigned version, bool keep_alive);
// The head of a streamed response: chunked for HTTP/1.1, else ended by close.
std::string stream_head(const HttpResponse& res, unsigned version, bool keep_alive);
// One chunk ("" gives nothing: an empty chunk would end the body).
std::string chunk(std::string_view data);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace plimsoll::api
