// StreamDecoder: appends each token's bytes to a pending buffer and releases
// the longest prefix that is decided (complete characters or invalid subparts).
#include "tokenizer/stream_decoder.h"

#include "tokenizer/clean_up.h"
#include "tokenizer/utf8.h"

namespace plimsoll {

std::string StreamDecoder::push(int32_t id) {
  tokenizer_->append_piece_text(prev_id_, id, &pending_);
  prev_id_ = id;
  return clean(drain(/*final=*/false), /*final=*/false);
}

std::string StreamDecoder::finish() { return clean(drain(/*final=*/true), /*final=*/true); }

std::string StreamDecoder::clean(std::string text, bool final) {
  if (!clean_up_) return text;
  uncleaned_ += text;
  const size_t n = final ? uncleaned_.size() : clean_up_stable_prefix(uncleaned_);
  std::string out = clean_up_tokenization(uncleaned_.substr(0, n));
  uncleaned_.erase(0, n);
  return out;
}

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
