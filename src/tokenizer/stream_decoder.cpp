// StreamDecoder: appends each token's bytes to a pending buffer and releases
// the longest prefix that is decided (complete characters or invalid subparts).
#include "tokenizer/stream_decoder.h"

#include "tokenizer/utf8.h"

namespace plimsoll {

std::string StreamDecoder::push(int32_t id) {
  tokenizer_->append_piece_text(prev_id_, id, &pending_);
  prev_id_ = id;
  return drain(/*final=*/false);
}

std::string StreamDecoder::finish() { return drain(/*final=*/true); }

std::string StreamDecoder::drain(bool final) {
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const Utf8Step step = utf8_step(pending_, pos);
    if (step.kind == Utf8StepKind::kTruncated && !final) break;
    if (step.kind == Utf8StepKind::kChar) {
      out.append(pending_, pos, step.length_bytes);
    } else {
      out.append(kReplacementChar);
    }
    pos += step.length_bytes;
  }
  pending_.erase(0, pos);
  return out;
}

}  // namespace plimsoll
