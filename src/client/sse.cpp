// SseParser: splits bytes into lines (\n, \r\n), gathers `data:` lines, and
// hands over an event at each blank line.
#include "client/sse.h"

namespace plimsoll::client {

bool SseParser::feed(std::string_view bytes, const std::function<bool(std::string_view)>& on_data) {
  pending_.append(bytes);
  size_t start = 0;
  for (size_t nl = pending_.find('\n', start); nl != std::string::npos; nl = pending_.find('\n', start)) {
    std::string_view line(pending_.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    start = nl + 1;
    if (!take_line(line, on_data)) {
      pending_.erase(0, start);
      return false;
    }
  }
  pending_.erase(0, start);
  return true;
}

bool SseParser::take_line(std::string_view line, const std::function<bool(std::string_view)>& on_data) {
  if (line.empty()) {  // end of an event
    if (!has_data_) return true;
    std::string data = std::move(data_);
    data_.clear();
    has_data_ = false;
    return on_data(data);
  }
  if (line.substr(0, 5) != "data:") return true;  // event:, id:, retry:, comments
  line.remove_prefix(5);
  if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  if (has_data_) data_ += '\n';
  data_.append(line);
  has_data_ = true;
  return true;
}

}  // namespace plimsoll::client
