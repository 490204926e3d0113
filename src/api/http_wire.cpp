// Status line, header fields and chunk framing, written out by hand (the
// routes only set plain status, fields and bodies).
#include "api/http_wire.h"

#include <boost/beast/http/status.hpp>

#include <cstdio>

namespace plimsoll::api {
namespace {

std::string head(const HttpResponse& res, unsigned version, bool keep_alive) {
  namespace http = boost::beast::http;
  std::string out = version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  out += std::to_string(res.status);
  out += ' ';
  out += std::string(http::obsolete_reason(http::int_to_status(static_cast<unsigned>(res.status))));
  out += "\r\n";
  if (!res.content_type.empty()) out += "Content-Type: " + res.content_type + "\r\n";
  for (const auto& [name, value] : res.headers.fields()) out += name + ": " + value + "\r\n";
  if (!keep_alive) {
    out += "Connection: close\r\n";
  } else if (version == 10) {
    out += "Connection: keep-alive\r\n";
  }
  return out;
}

}  // namespace

std::string serialize_response(HttpResponse& res, unsigned version, bool keep_alive) {
  std::string out = head(res, version, keep_alive);
  if (res.status != 204) out += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";  // 204: none (RFC 9110)
  out += "\r\n";
  out += res.body;
  std::string().swap(res.body);
  return out;
}

std::string stream_head(const HttpResponse& res, unsigned version, bool keep_alive) {
  std::string out = head(res, version, keep_alive);
  if (version != 10) out += "Transfer-Encoding: chunked\r\n";
  return out + "\r\n";
}

std::string chunk(std::string_view data) {
  if (data.empty()) return "";
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out = size;
  out.append(data);
  out += "\r\n";
  return out;
}

}  // namespace plimsoll::api
