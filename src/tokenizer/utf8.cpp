// UTF-8 classification by Unicode Table 3-7 (well-formed byte sequences) and
// lossy decoding built on it.
#include "tokenizer/utf8.h"

#include <cstdint>

namespace plimsoll {
namespace {

// Length of the sequence a lead byte starts and the allowed range of its
// second byte; length 0 means the byte cannot start a sequence.
struct LeadInfo {
  size_t length_bytes;
  uint8_t second_min;
  uint8_t second_max;
};

LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

Utf8Step utf8_step(std::string_view bytes, size_t pos) {
  const LeadInfo lead = lead_info(static_cast<uint8_t>(bytes[pos]));
  if (lead.length_bytes == 0) return {Utf8StepKind::kInvalid, 1};
  for (size_t k = 1; k < lead.length_bytes; ++k) {
    if (pos + k >= bytes.size()) return {Utf8StepKind::kTruncated, k};
    const uint8_t b = static_cast<uint8_t>(bytes[pos + k]);
    const uint8_t lo = k == 1 ? lead.second_min : 0x80;
    const uint8_t hi = k == 1 ? lead.second_max : 0xBF;
    if (b < lo || b > hi) return {Utf8StepKind::kInvalid, k};
  }
  return {Utf8StepKind::kChar, lead.length_bytes};
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    const Utf8Step step = utf8_step(bytes, pos);
    if (step.kind == Utf8StepKind::kChar) {
      out.append(bytes.substr(pos, step.length_bytes));
    } else {
      out.append(kReplacementChar);
    }
    pos += step.length_bytes;
  }
  return out;
}

}  // namespace plimsoll
