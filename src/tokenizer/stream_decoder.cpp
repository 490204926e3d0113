// StreamDecoder: appends each token's bytes to a pending buffer and releases
// the longest prefix that is decided (complete characters or invalid subparts).
#include "tokenizer/stream_decoder.h"

#include "tokenizer/utf8.h"

namespace plimsoll {

std::string clean_up_tokenization(std::string text) {
  static constexpr std::string_view kRules[][2] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    std::string out;
    size_t pos = 0;
    for (size_t at; (at = text.find(from, pos)) != std::string::npos; pos = at + from.size()) {
      out.append(text, pos, at - pos);
      out.append(to);
    }
    if (pos == 0) continue;
    out.append(text, pos, std::string::npos);
    text = std::move(out);
  }
  return text;
}

size_t clean_up_stable_prefix(std::string_view text) {
  const size_t last = text.rfind(' ');
  if (last == std::string_view::npos || last + 4 < text.size()) return text.size();
  for (size_t s = last; s > 0;) {
    if (text[s - 1] != '\'') return s;
    const size_t before = text.rfind(' ', s - 1);
    if (before == std::string_view::npos) break;
    s = before;
  }
  return 0;
}

std::string StreamDecoder::push(int32_t id) {
  tokenizer_->append_piece_text(prev_id_, id, &pending_);
  prev_id_ = id;
  return clean(drain(/*final=*/false), /*final=*/false);
}

std::string StreamDecoder::finish() { return clean(drain(/*final=*/true), /*final=*/true); }

std::string StreamDecoder::clean(std::string text, bool final) {
  if (!tokenizer_->cleans_up_tokenization_spaces()) return text;
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
