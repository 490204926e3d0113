// Case-insensitive header lookup and the request's early body release.
#include "api/http_message.h"

#include <algorithm>
#include <cctype>

namespace plimsoll::api {

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

void HttpHeaders::add(std::string name, std::string value) { fields_.emplace_back(std::move(name), std::move(value)); }

void HttpHeaders::set(std::string name, std::string value) {
  std::erase_if(fields_, [&](const auto& f) { return equals_ignoring_case(f.first, name); });
  add(std::move(name), std::move(value));
}

std::string HttpHeaders::get(std::string_view name) const {
  for (const auto& [n, v] : fields_) {
    if (equals_ignoring_case(n, name)) return v;
  }
  return "";
}

bool HttpHeaders::has(std::string_view name) const {
  return std::any_of(fields_.begin(), fields_.end(), [&](const auto& f) { return equals_ignoring_case(f.first, name); });
}

void HttpRequest::release_body() {
  std::string().swap(body);
  body_reservation.release();
}

}  // namespace plimsoll::api
