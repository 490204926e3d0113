// Server-Sent Events framing: bytes in (any split), the data of each complete
// event out. Only `data:` lines matter to TGI and OpenAI streams.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace plimsoll::client {

class SseParser {
 public:
  // Calls on_data with the data of each event completed by `bytes` (multi-line
  // data joined by '\n'). Returns false when on_data returned false (stop).
  bool feed(std::string_view bytes, const std::function<bool(std::string_view data)>& on_data);

 private:
  bool take_line(std::string_view line, const std::function<bool(std::string_view)>& on_data);

  std::string pending_;  // an incomplete line
  std::string data_;     // the data lines of the current event
  bool has_data_ = false;
};

}  // namespace plimsoll::client
