// StopHoldback: the text of one streamed OpenAI choice, with the stop
// sequence left out as OpenAI and vLLM do. A tail that may still become a stop
// sequence is held back until it can no longer match (or the choice ends).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/sampling_params.h"

namespace plimsoll::api {

class StopHoldback {
 public:
  // Keeps the list shared; `hold` false: everything passes at once.
  StopHoldback(StopList stops, bool hold) : stops_(std::move(stops)), hold_(hold && !stops_.empty()) {}

  // The text that can be sent now that `piece` arrived.
  std::string push(std::string_view piece);
  // The last piece: everything held, cut where the matched stop sequence
  // begins (`stop_offset` in the whole generated text, -1: none matched).
  std::string finish(std::string_view piece, int64_t stop_offset);
  // Bytes of generated text sent so far.
  int64_t sent_bytes() const { return sent_; }

 private:
  // Length of the longest suffix of held_ that is a proper prefix of a stop sequence.
  size_t open_prefix() const;

  StopList stops_;
  bool hold_;
  std::string held_;
  int64_t sent_ = 0;
};

// `text` cut where a matched stop sequence begins (stop_offset < 0 or past
// the end: unchanged).
std::string without_stop(const std::string& text, int64_t stop_offset);

}  // namespace plimsoll::api
