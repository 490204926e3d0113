// CORS: origin matching and the preflight answer.
#include "api/cors.h"

namespace plimsoll::api {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string cors_allowed_origin(std::string_view allow_list, std::string_view origin) {
  if (allow_list.empty() || origin.empty()) return "";
  while (!allow_list.empty()) {
    const size_t comma = allow_list.find(',');
    const std::string_view item = trimmed(allow_list.substr(0, comma));
    if (item == "*") return "*";
    if (item == origin) return std::string(origin);
    allow_list = comma == std::string_view::npos ? std::string_view() : allow_list.substr(comma + 1);
  }
  return "";
}

void add_cors_headers(HttpResponse& res, const std::string& allowed_origin) {
  if (allowed_origin.empty()) return;
  res.set_header("Access-Control-Allow-Origin", allowed_origin);
  if (allowed_origin != "*") res.set_header("Vary", "Origin");
}

HttpResponse cors_preflight(const HttpRequest& req, const std::string& allowed_origin) {
  HttpResponse res;
  res.status = 204;
  add_cors_headers(res, allowed_origin);
  res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  const std::string asked = req.header("Access-Control-Request-Headers");
  res.set_header("Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type" : asked);
  res.set_header("Access-Control-Max-Age", "600");
  return res;
}

}  // namespace plimsoll::api
