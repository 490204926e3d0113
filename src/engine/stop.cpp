// Stop-sequence matching on the generated text.
#include "engine/stop.h"

#include <algorithm>

namespace plimsoll {

StopMatcher::StopMatcher(StopList stops) : stops_(std::move(stops)) {
  for (const std::string& s : stops_) longest_ = std::max(longest_, s.size());
}

bool StopMatcher::push(std::string_view piece) {
  const size_t old_size = text_.size();
  text_.append(piece);
  if (stops_.empty() || piece.empty()) return false;
  // A new match must end after old_size, so it starts at or after old_size - (len - 1).
  const size_t from = old_size >= longest_ ? old_size - longest_ + 1 : 0;
  size_t best = std::string::npos;
  for (const std::string& s : stops_) {
    const size_t at = text_.find(s, from);
    if (at != std::string::npos) best = std::min(best, at);
  }
  match_begin_ = best;
  return best != std::string::npos;
}

}  // namespace plimsoll
