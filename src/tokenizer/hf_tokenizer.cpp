// HfTokenizer encoding (added tokens -> normalizer -> pre-tokenizer -> BPE ->
// post-processor wrap) and decoding (skip specials -> decoder chain).
#include "tokenizer/hf_tokenizer.h"

#include "tokenizer/hf_tokenizer_data.h"
#include "tokenizer/utf8.h"

namespace plimsoll {
namespace {

bool has_invalid_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Step step = utf8_step(text, pos);
    if (step.kind != Utf8StepKind::kChar) return true;
    pos += step.length_bytes;
  }
  return false;
}

void encode_words(const hf::TokenizerData& data, std::string_view text, bool at_text_start,
                  std::vector<int32_t>* ids) {
  std::vector<hf::PreToken> words = {{std::string(text), at_text_start}};
  if (data.pre_tokenizer != nullptr) data.pre_tokenizer->pre_tokenize(&words);
  for (const hf::PreToken& word : words) data.model.encode_word(word.text, ids);
}

// One stretch of text between raw-matched added tokens.
void encode_segment(const hf::TokenizerData& data, std::string_view text, bool at_text_start,
                    std::vector<int32_t>* ids) {
  const std::string normalized =
      data.normalizer != nullptr ? data.normalizer->normalize(text) : std::string(text);
  for (const hf::TextSegment& part : data.normalized_added.split(normalized)) {
    if (part.token_id >= 0) {
      ids->push_back(part.token_id);
    } else {
      encode_words(data, part.text, at_text_start && part.begin == 0, ids);
    }
  }
}

}  // namespace

std::vector<int32_t> HfTokenizer::encode(std::string_view text, bool add_special) const {
  const hf::TokenizerData& data = *data_;
  std::string clean;
  if (has_invalid_utf8(text)) {
    clean = utf8_lossy(text);
    text = clean;
  }
  std::vector<int32_t> ids;
  if (add_special) ids = data.wrap.prefix_ids;
  for (const hf::TextSegment& segment : data.raw_added.split(text)) {
    if (segment.token_id >= 0) {
      ids.push_back(segment.token_id);
    } else {
      encode_segment(data, segment.text, segment.begin == 0, &ids);
    }
  }
  if (add_special) ids.insert(ids.end(), data.wrap.suffix_ids.begin(), data.wrap.suffix_ids.end());
  return ids;
}

std::string HfTokenizer::decode_tokens(std::span<const int32_t> ids) const {
  const hf::TokenizerData& data = *data_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    if (is_special(id) || token(id).empty()) continue;
    tokens.emplace_back(token(id));
  }
  std::string out;
  if (data.decoder == nullptr) {
    for (size_t i = 0; i < tokens.size(); ++i) out += (i > 0 ? " " : "") + tokens[i];
    return out;
  }
  data.decoder->decode_chain(&tokens);
  for (const std::string& t : tokens) out += t;
  return out;
}

std::string HfTokenizer::decode_raw(std::span<const int32_t> ids) const { return decode_tokens(ids); }

// Text restarts after a special token (BOS, a chat header's end, ...): the
// decoder's first-token rules (Strip, Metaspace) apply to the token after it,
// as they do to the first token of decode() and of HF's streamers.
void HfTokenizer::append_piece_text(int32_t prev_id, int32_t id, std::string* out) const {
  if (is_special(id) || token(id).empty()) return;
  if (prev_id < 0 || is_special(prev_id) || token(prev_id).empty()) {
    out->append(decode_tokens(std::span<const int32_t>(&id, 1)));
    return;
  }
  const int32_t pair[2] = {prev_id, id};
  const std::string before = decode_tokens(std::span<const int32_t>(pair, 1));
  const std::string both = decode_tokens(pair);
  if (both.starts_with(before)) {
    out->append(both, before.size());
  } else {
    out->append(decode_tokens(std::span<const int32_t>(&id, 1)));
  }
}

int64_t HfTokenizer::vocab_size() const {
  return static_cast<int64_t>(data_->model.tokens().size());
}
int64_t HfTokenizer::max_token_bytes() const { return 4 * data_->longest_token_bytes; }
int32_t HfTokenizer::bos_id() const { return data_->bos_id; }
int32_t HfTokenizer::eos_id() const { return data_->eos_id; }

bool HfTokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < data_->special.size() &&
         data_->special[static_cast<size_t>(id)];
}

std::string_view HfTokenizer::token(int32_t id) const {
  const auto& tokens = data_->model.tokens();
  if (id < 0 || static_cast<size_t>(id) >= tokens.size()) return {};
  return tokens[static_cast<size_t>(id)];
}

std::optional<int32_t> HfTokenizer::token_id(std::string_view text) const {
  for (const hf::AddedToken& added : data_->added_tokens) {
    if (added.content == text) return added.id;
  }
  return data_->model.token_id(text);
}

bool HfTokenizer::adds_prefix() const { return !data_->wrap.prefix_ids.empty(); }
const HfTokenizerConfig& HfTokenizer::config() const { return data_->config; }

}  // namespace plimsoll
