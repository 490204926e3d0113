// WordPieceTokenizer: the phantom-space vocabulary read back into word-start
// and continuation tables, and HF's WordPiece greedy longest-match.
#include "tokenizer/wordpiece.h"

#include <algorithm>

#include "tokenizer/bert_text.h"
#include "tokenizer/utf8.h"

namespace plimsoll {
namespace {

constexpr std::string_view kPhantomSpace = "\xE2\x96\x81";  // U+2581
constexpr size_t kMaxWordChars = 100;                         // max_input_chars_per_word

bool is_bracketed(std::string_view piece) {
  return piece.size() >= 2 && piece.front() == '[' && piece.back() == ']';
}

size_t char_count(std::string_view text) {
  size_t n = 0;
  for (size_t pos = 0; pos < text.size(); pos += utf8_step(text, pos).length_bytes) ++n;
  return n;
}

// Byte offsets of the character boundaries of `text`, 0 and size() included.
std::vector<size_t> char_boundaries(std::string_view text) {
  std::vector<size_t> out = {0};
  for (size_t pos = 0; pos < text.size();) {
    pos += utf8_step(text, pos).length_bytes;
    out.push_back(pos);
  }
  return out;
}

Status check_id(int32_t id, int64_t n, const std::string& file_name, const char* what) {
  if (id >= 0 && id < n) return Status::ok_status();
  return make_error(ErrorCode::kInvalidFile, file_name + ": the " + std::string(what) + " token id " +
                                                 std::to_string(id) + " is not among the " + std::to_string(n) +
                                                 " tokens");
}

}  // namespace

Result<WordPieceTokenizer> WordPieceTokenizer::create(const Vocab& vocab, const std::string& file_name) {
  if (vocab.model != "bert") {
    return make_error(ErrorCode::kInvalidArgument,
                      file_name + ": tokenizer.ggml.model '" + vocab.model + "' is not WordPiece ('bert')");
  }
  PLIMSOLL_TRY(check_id(vocab.unk_id, vocab.size(), file_name, "unknown"));
  WordPieceTokenizer t;
  t.pieces_ = vocab.pieces;
  t.special_.assign(vocab.pieces.size(), false);
  std::vector<hf::AddedToken> specials;
  for (size_t id = 0; id < vocab.pieces.size(); ++id) {
    const std::string& piece = vocab.pieces[id];
    const auto i = static_cast<int32_t>(id);
    t.longest_token_bytes_ = std::max(t.longest_token_bytes_, static_cast<int64_t>(piece.size()));
    const bool control = id < vocab.types.size() && vocab.types[id] == TokenType::kControl;
    if (control && !piece.empty()) {
      t.special_[id] = true;
      specials.push_back({i, piece, true, false, false, false});
    } else if (piece.starts_with(kPhantomSpace)) {
      t.word_start_.try_emplace(piece.substr(kPhantomSpace.size()), i);
    } else if (!is_bracketed(piece) && !piece.empty()) {
      t.continuation_.try_emplace(piece, i);
    }
  }
  t.specials_ = hf::AddedTokenSplitter(std::move(specials));
  t.unk_id_ = vocab.unk_id;
  t.bos_id_ = vocab.bos_id;
  t.eos_id_ = vocab.eos_id;
  t.add_bos_ = vocab.add_bos && vocab.bos_id >= 0;
  t.add_eos_ = vocab.add_eos && vocab.eos_id >= 0;
  if (t.add_bos_) PLIMSOLL_TRY(check_id(t.bos_id_, vocab.size(), file_name, "[CLS]"));
  if (t.add_eos_) PLIMSOLL_TRY(check_id(t.eos_id_, vocab.size(), file_name, "[SEP]"));
  return t;
}

// HF's WordPiece: from each start, the longest known piece ("##" after the
// first); no piece at some start makes the whole word one [UNK].
void WordPieceTokenizer::encode_word(std::string_view word, std::vector<int32_t>* ids) const {
  if (char_count(word) > kMaxWordChars) {
    ids->push_back(unk_id_);
    return;
  }
  const std::vector<size_t> bounds = char_boundaries(word);
  std::vector<int32_t> pieces;
  size_t start = 0;  // index into bounds
  while (start + 1 < bounds.size()) {
    const auto& table = start == 0 ? word_start_ : continuation_;
    int32_t found = -1;
    size_t end = bounds.size() - 1;
    for (; end > start; --end) {
      const auto it = table.find(std::string(word.substr(bounds[start], bounds[end] - bounds[start])));
      if (it != table.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {
      ids->push_back(unk_id_);
      return;
    }
    pieces.push_back(found);
    start = end;
  }
  ids->insert(ids->end(), pieces.begin(), pieces.end());
}

std::vector<int32_t> WordPieceTokenizer::encode(std::string_view text, bool add_special) const {
  std::string clean;
  for (size_t pos = 0; pos < text.size(); pos += utf8_step(text, pos).length_bytes) {
    if (utf8_step(text, pos).kind != Utf8StepKind::kChar) {
      clean = utf8_lossy(text);
      text = clean;
      break;
    }
  }
  std::vector<int32_t> ids;
  if (add_special && add_bos_) ids.push_back(bos_id_);
  for (const hf::TextSegment& segment : specials_.split(text)) {
    if (segment.token_id >= 0) {
      ids.push_back(segment.token_id);
      continue;
    }
    for (const std::string& word : bert_words(bert_normalize(segment.text))) encode_word(word, &ids);
  }
  if (add_special && add_eos_) ids.push_back(eos_id_);
  return ids;
}

std::string_view WordPieceTokenizer::piece_text(int32_t id) const {
  std::string_view piece = token(id);
  if (piece.starts_with(kPhantomSpace)) piece.remove_prefix(kPhantomSpace.size());
  return piece;
}

std::string WordPieceTokenizer::decode_raw(std::span<const int32_t> ids) const {
  std::string out;
  for (const int32_t id : ids) {
    if (is_special(id) || token(id).empty()) continue;
    if (!out.empty() && token(id).starts_with(kPhantomSpace)) out.push_back(' ');
    out.append(piece_text(id));
  }
  return out;
}

// A word-initial piece brings its space, as a SentencePiece piece does (the
// first of a text after [CLS] none): /tokenize's spans then cover " world".
void WordPieceTokenizer::append_piece_text(int32_t prev_id, int32_t id, std::string* out) const {
  if (is_special(id) || token(id).empty()) return;
  const bool word_start = token(id).starts_with(kPhantomSpace);
  if (word_start && !(prev_id >= 0 && is_special(prev_id))) out->push_back(' ');
  out->append(piece_text(id));
}

std::string_view WordPieceTokenizer::token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return {};
  return pieces_[static_cast<size_t>(id)];
}

bool WordPieceTokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < special_.size() && special_[static_cast<size_t>(id)];
}

}  // namespace plimsoll
