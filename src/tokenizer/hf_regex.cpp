// HfRegex over PCRE2 (8-bit, UTF + UCP, JIT when available); one match-data
// block per find_all call, so a compiled pattern is shared across threads.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/hf_regex.h"

#include <pcre2.h>

namespace plimsoll::hf {

struct HfRegex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int error_code) {
  PCRE2_UCHAR buffer[256];
  const int n = pcre2_get_error_message(error_code, buffer, sizeof(buffer));
  return n < 0 ? "unknown PCRE2 error" : std::string(reinterpret_cast<char*>(buffer));
}

struct MatchData {
  explicit MatchData(const pcre2_code* code)
      : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(data); }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
  pcre2_match_data* data;
};

size_t next_char_end(std::string_view text, size_t pos) {
  ++pos;
  while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
  return pos;
}

}  // namespace

Result<HfRegex> HfRegex::compile(std::string_view pattern, bool literal, const std::string& where) {
  // PCRE2_LITERAL admits no UCP (it has no classes to apply it to).
  const uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    return make_error(ErrorCode::kUnsupported,
                      where + ": regex '" + std::string(pattern) + "' does not compile at offset " +
                          std::to_string(error_offset) + ": " + pcre2_message(error_code));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional speed-up; interpreter otherwise
  auto owned = std::make_shared<Code>();
  owned->code = code;
  return HfRegex(std::move(owned));
}

std::vector<ByteRange> HfRegex::find_all(std::string_view text) const {
  std::vector<ByteRange> matches;
  MatchData match(code_->code);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos <= text.size()) {
    const int rc = pcre2_match(code_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK,
                               match.data, nullptr);
    if (rc < 0) break;  // no match (or a resource limit: treat the rest as unmatched)
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.data);
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    if (end == begin) {
      if (begin >= text.size()) break;
      pos = next_char_end(text, begin);
      continue;
    }
    matches.push_back({begin, end});
    pos = end;
  }
  return matches;
}

}  // namespace plimsoll::hf
