// Tokenizer::encode: UTF-8 split with byte fallback, then best-pair-first BPE
// merging with a priority queue over adjacent pairs and a linked symbol list.
#include <queue>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace plimsoll {
namespace {

// One run of text (a character or merged characters) or one fallback token.
struct Symbol {
  uint32_t begin_byte = 0;   // start in the segment's text
  uint32_t length_bytes = 0; // 0 once merged into its left neighbour
  int32_t prev = -1;
  int32_t next = -1;
  int32_t id = -1;
  bool mergeable = false;    // false for byte-fallback and unknown tokens
};

struct PairCandidate {
  float score;
  int32_t left;
  int32_t right;
  uint32_t merged_length_bytes;
  int32_t id;
};

// Highest score first; on ties the leftmost pair (symbols keep text order).
struct CandidateOrder {
  bool operator()(const PairCandidate& a, const PairCandidate& b) const {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;
  }
};

using CandidateQueue =
    std::priority_queue<PairCandidate, std::vector<PairCandidate>, CandidateOrder>;

// The merge state of one segment; a small helper so each step stays short.
class SegmentMerger {
 public:
  SegmentMerger(std::string_view text, const std::vector<float>& scores, EncodeStats* stats)
      : text_(text), scores_(scores), stats_(stats) {}

  void add_symbol(uint32_t begin_byte, uint32_t length_bytes, int32_t id, bool mergeable) {
    Symbol s;
    s.begin_byte = begin_byte;
    s.length_bytes = length_bytes;
    s.prev = static_cast<int32_t>(symbols_.size()) - 1;
    s.next = static_cast<int32_t>(symbols_.size()) + 1;
    s.id = id;
    s.mergeable = mergeable;
    symbols_.push_back(s);
  }

  template <typename Lookup>
  void merge_all(const Lookup& lookup) {
    if (symbols_.empty()) return;
    symbols_.back().next = -1;
    if (stats_) stats_->initial_symbols += static_cast<int64_t>(symbols_.size());
    for (size_t i = 1; i < symbols_.size(); ++i) {
      try_pair(static_cast<int32_t>(i - 1), static_cast<int32_t>(i), lookup);
    }
    while (!queue_.empty()) {
      const PairCandidate c = queue_.top();
      queue_.pop();
      if (stats_) ++stats_->pairs_popped;
      if (!still_valid(c)) continue;
      apply(c);
      try_pair(symbols_[static_cast<size_t>(c.left)].prev, c.left, lookup);
      try_pair(c.left, symbols_[static_cast<size_t>(c.left)].next, lookup);
    }
  }

  void append_ids(std::vector<int32_t>* ids) const {
    for (int32_t i = symbols_.empty() ? -1 : 0; i >= 0; i = symbols_[static_cast<size_t>(i)].next) {
      ids->push_back(symbols_[static_cast<size_t>(i)].id);
    }
  }

 private:
  template <typename Lookup>
  void try_pair(int32_t left, int32_t right, const Lookup& lookup) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[static_cast<size_t>(left)];
    const Symbol& r = symbols_[static_cast<size_t>(right)];
    if (!l.mergeable || !r.mergeable) return;
    const uint32_t merged = l.length_bytes + r.length_bytes;
    const std::optional<int32_t> id = lookup(text_.substr(l.begin_byte, merged));
    if (!id) return;
    queue_.push({scores_[static_cast<size_t>(*id)], left, right, merged, *id});
    if (stats_) ++stats_->pairs_pushed;
  }

  bool still_valid(const PairCandidate& c) const {
    const Symbol& l = symbols_[static_cast<size_t>(c.left)];
    const Symbol& r = symbols_[static_cast<size_t>(c.right)];
    return l.length_bytes != 0 && r.length_bytes != 0 && l.next == c.right &&
           l.length_bytes + r.length_bytes == c.merged_length_bytes;
  }

  void apply(const PairCandidate& c) {
    Symbol& l = symbols_[static_cast<size_t>(c.left)];
    Symbol& r = symbols_[static_cast<size_t>(c.right)];
    l.length_bytes += r.length_bytes;
    l.id = c.id;
    l.next = r.next;
    if (r.next >= 0) symbols_[static_cast<size_t>(r.next)].prev = c.left;
    r.length_bytes = 0;
    if (stats_) ++stats_->merges;
  }

  std::string_view text_;
  const std::vector<float>& scores_;
  EncodeStats* stats_;
  std::vector<Symbol> symbols_;
  CandidateQueue queue_;
};

}  // namespace

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special,
                                       EncodeStats* stats) const {
  std::vector<int32_t> ids;
  if (add_bos && vocab_.bos_id >= 0) ids.push_back(vocab_.bos_id);
  if (parse_special && !specials_.empty()) {
    encode_with_specials(text, &ids, stats);
  } else {
    encode_segment(text, /*at_start=*/true, &ids, stats);
  }
  return ids;
}

const Tokenizer::Special* Tokenizer::match_special(std::string_view text, size_t pos) const {
  if (!special_first_byte_[static_cast<uint8_t>(text[pos])]) return nullptr;
  for (const Special& special : specials_) {  // longest first
    if (text.substr(pos, special.text.size()) == special.text) return &special;
  }
  return nullptr;
}

void Tokenizer::encode_with_specials(std::string_view text, std::vector<int32_t>* ids,
                                     EncodeStats* stats) const {
  size_t segment_begin = 0;
  for (size_t pos = 0; pos < text.size();) {
    const Special* special = match_special(text, pos);
    if (!special) {
      ++pos;
      continue;
    }
    encode_segment(text.substr(segment_begin, pos - segment_begin), segment_begin == 0, ids,
                   stats);
    ids->push_back(special->id);
    pos += special->text.size();
    segment_begin = pos;
  }
  encode_segment(text.substr(segment_begin), segment_begin == 0, ids, stats);
}

void Tokenizer::encode_segment(std::string_view text, bool at_start, std::vector<int32_t>* ids,
                               EncodeStats* stats) const {
  if (text.empty()) return;
  // Symbols index the text with uint32 offsets; split larger inputs (> 1 GiB) in runs.
  constexpr size_t kMaxSegmentBytes = size_t{1} << 30;
  if (text.size() > kMaxSegmentBytes) {
    encode_segment(text.substr(0, kMaxSegmentBytes), at_start, ids, stats);
    encode_segment(text.substr(kMaxSegmentBytes), false, ids, stats);
    return;
  }
  std::string work;
  if (at_start && vocab_.add_space_prefix) work.push_back(' ');  // the dummy prefix
  work.append(text);

  SegmentMerger merger(work, merge_scores_, stats);
  for (size_t pos = 0; pos < work.size();) {
    const Utf8Step step = utf8_step(work, pos);
    const size_t length = step.kind == Utf8StepKind::kChar ? step.length_bytes : 1;
    const auto begin = static_cast<uint32_t>(pos);
    if (const std::optional<int32_t> id = text_token(std::string_view(work).substr(pos, length))) {
      merger.add_symbol(begin, static_cast<uint32_t>(length), *id, /*mergeable=*/true);
    } else {
      for (size_t b = 0; b < length; ++b) {
        const int32_t byte_id = byte_ids_[static_cast<uint8_t>(work[pos + b])];
        const int32_t fallback_id = byte_id >= 0 ? byte_id : vocab_.unk_id;
        if (fallback_id >= 0) {
          merger.add_symbol(static_cast<uint32_t>(pos + b), 1, fallback_id, /*mergeable=*/false);
        }
      }
    }
    pos += length;
  }
  merger.merge_all([this](std::string_view s) { return text_token(s); });
  merger.append_ids(ids);
}

}  // namespace plimsoll
