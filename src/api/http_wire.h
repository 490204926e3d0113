// HTTP/1.x response bytes for the transport: a whole response and a
// stream's head written by Beast's serializer (http::response +
// response_serializer), and one chunk of a stream (the bytes of http::make_chunk).
#pragma once

#include <string>
#include <string_view>

#include "api/http_message.h"

namespace plimsoll::api {

// `version`: 10 or 11. Moves res.body into the result.
std::string serialize_response(HttpResponse& res, unsigned version, bool keep_alive);
// The head of a streamed response: chunked for HTTP/1.1, else ended by close.
std::string stream_head(const HttpResponse& res, unsigned version, bool keep_alive);
// `data` as one chunk ("" gives nothing: an empty chunk would end the body),
// followed by the last chunk when `last`.
std::string chunk(std::string_view data, bool last = false);

}  // namespace plimsoll::api
