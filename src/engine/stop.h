// StopMatcher: finds the first stop sequence in a growing generated text,
// looking only at the tail a new piece can have completed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/sampling_params.h"

namespace plimsoll {

class StopMatcher {
 public:
  // Keeps the list shared (no copy of the stop strings).
  explicit StopMatcher(StopList stops);

  // Appends new text; true when a stop sequence now ends inside the text.
  bool push(std::string_view piece);
  // The text seen so far (through the end of the piece that matched).
  const std::string& text() const { return text_; }
  // Where the matched stop sequence begins in text() (npos when none).
  size_t match_begin() const { return match_begin_; }

 private:
  StopList stops_;
  size_t longest_ = 0;
  std::string text_;
  size_t match_begin_ = std::string::npos;
};

}  // namespace plimsoll
