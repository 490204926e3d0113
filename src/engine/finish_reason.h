// Why a sequence stopped, with TGI's spellings.
#pragma once

namespace plimsoll {

enum class FinishReason { kLength, kEosToken, kStopSequence };

inline const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength: return "length";
    case FinishReason::kEosToken: return "eos_token";
    case FinishReason::kStopSequence: return "stop_sequence";
  }
  return "length";
}

}  // namespace plimsoll
