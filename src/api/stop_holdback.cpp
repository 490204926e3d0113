// Holding back a streamed tail that may still become a stop sequence.
#include "api/stop_holdback.h"

#include <algorithm>
#include <cstring>

namespace plimsoll::api {

size_t StopHoldback::open_prefix() const {
  // Every start of a suffix that could open a stop sequence; the first (longest) wins.
  for (size_t start = 0; start < held_.size(); ++start) {
    const size_t len = held_.size() - start;
    for (const std::string& stop : stops_) {
      if (len < stop.size() && std::memcmp(held_.data() + start, stop.data(), len) == 0) return len;
    }
  }
  return 0;
}

std::string StopHoldback::push(std::string_view piece) {
  held_.append(piece);
  const size_t keep = hold_ ? open_prefix() : 0;
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  sent_ += static_cast<int64_t>(out.size());
  return out;
}

std::string StopHoldback::finish(std::string_view piece, int64_t stop_offset) {
  held_.append(piece);
  size_t send = held_.size();
  if (stop_offset >= 0) send = static_cast<size_t>(std::clamp<int64_t>(stop_offset - sent_, 0, static_cast<int64_t>(send)));
  std::string out = held_.substr(0, send);
  held_.clear();
  sent_ += static_cast<int64_t>(out.size());
  return out;
}

std::string without_stop(const std::string& text, int64_t stop_offset) {
  if (stop_offset < 0 || static_cast<size_t>(stop_offset) >= text.size()) return text;
  return text.substr(0, static_cast<size_t>(stop_offset));
}

}  // namespace plimsoll::api
