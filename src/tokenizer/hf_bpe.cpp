// HfBpe: loading (vocab, both merge forms, option checks) and the merge loop:
// lowest rank first, leftmost on ties, a heap over adjacent pairs, O(n log n).
#include "tokenizer/hf_bpe.h"

#include <queue>

#include "tokenizer/utf8.h"

namespace plimsoll::hf {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

std::string byte_token_text(int byte) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  return {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
}

// Options we do not implement must be absent, null or neutral.
Status check_neutral_options(const Json& model, const std::string& where) {
  if (const Json* dropout = find_member(model, "dropout");
      dropout != nullptr && !(dropout->is_number() && dropout->get<double>() == 0.0)) {
    return unsupported_value(where, "dropout", dropout->dump());
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const Json* value = find_member(model, key);
    if (value != nullptr && !(value->is_string() && value->get<std::string>().empty())) {
      return unsupported_value(where, key, value->dump());
    }
  }
  return Status::ok_status();
}

struct Candidate {
  int32_t rank;
  int32_t left;  // symbol index
  int32_t left_id;
  int32_t right_id;
  bool operator>(const Candidate& other) const {
    return rank != other.rank ? rank > other.rank : left > other.left;
  }
};

}  // namespace

Result<HfBpe> HfBpe::load(const Json& model, const std::string& where) {
  PLIMSOLL_ASSIGN(const std::string type, get_string_or(model, "type", "BPE", where));
  if (type != "BPE") return unsupported_value(where, "type", type);
  PLIMSOLL_TRY(check_neutral_options(model, where));
  HfBpe bpe;
  PLIMSOLL_ASSIGN(bpe.byte_fallback_, get_bool_or(model, "byte_fallback", false, where));
  PLIMSOLL_ASSIGN(bpe.fuse_unk_, get_bool_or(model, "fuse_unk", false, where));
  PLIMSOLL_ASSIGN(bpe.ignore_merges_, get_bool_or(model, "ignore_merges", false, where));
  const Json* vocab = find_member(model, "vocab");
  if (vocab == nullptr || !vocab->is_object()) return invalid_field(where, "vocab", "is not an object");
  PLIMSOLL_TRY(bpe.load_vocab(*vocab, where));
  const Json* merges = find_member(model, "merges");
  if (merges != nullptr) PLIMSOLL_TRY(bpe.load_merges(*merges, where));
  PLIMSOLL_ASSIGN(const std::string unk, get_string_or(model, "unk_token", "", where));
  if (!unk.empty()) {
    const auto id = bpe.token_id(unk);
    if (!id) return invalid_field(where, "unk_token", "'" + unk + "' is not in the vocab");
    bpe.unk_id_ = *id;
  }
  for (int b = 0; b < 256; ++b) bpe.byte_ids_[b] = bpe.token_id(byte_token_text(b)).value_or(-1);
  return bpe;
}

Status HfBpe::load_vocab(const Json& vocab, const std::string& where) {
  const int64_t limit = token_id_limit(static_cast<int64_t>(vocab.size()));
  for (const auto& [token, id_json] : vocab.items()) {
    if (!id_json.is_number_integer() || id_json.get<int64_t>() < 0) {
      return invalid_field(where, "vocab", "id of '" + token + "' is not a valid id");
    }
    if (id_json.get<int64_t>() >= limit) {
      return invalid_field(where, "vocab", "id " + std::to_string(id_json.get<int64_t>()) + " of '" + token +
                                               "' is not below " + std::to_string(limit) + " (its " +
                                               std::to_string(vocab.size()) + " entries + " +
                                               std::to_string(kMaxTokenIdGap) + ")");
    }
    const auto id = id_json.get<int32_t>();
    vocab_.emplace(token, id);
    reserve_ids(static_cast<size_t>(id) + 1);
    tokens_[static_cast<size_t>(id)] = token;
  }
  return Status::ok_status();
}

Status HfBpe::load_merges(const Json& merges, const std::string& where) {
  if (!merges.is_array()) return invalid_field(where, "merges", "is not a list");
  for (const Json& merge : merges) {
    if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      PLIMSOLL_TRY(add_merge(merge[0].get<std::string>(), merge[1].get<std::string>(), where));
      continue;
    }
    if (!merge.is_string()) return invalid_field(where, "merges", "has an entry of the wrong type");
    const std::string& text = merge.get_ref<const std::string&>();
    // "a b": split at the space that leaves two known tokens (normally the only one).
    bool added = false;
    for (size_t space = text.find(' '); space != std::string::npos && !added;
         space = text.find(' ', space + 1)) {
      const std::string_view left(text.data(), space);
      const std::string_view right(text.data() + space + 1, text.size() - space - 1);
      if (token_id(left) && token_id(right)) {
        PLIMSOLL_TRY(add_merge(left, right, where));
        added = true;
      }
    }
    if (!added) return invalid_field(where, "merges", "entry '" + text + "' is not two vocab tokens");
  }
  return Status::ok_status();
}

Status HfBpe::add_merge(std::string_view left, std::string_view right, const std::string& where) {
  const auto left_id = token_id(left);
  const auto right_id = token_id(right);
  const auto merged_id = token_id(std::string(left) + std::string(right));
  if (!left_id || !right_id || !merged_id) {
    return invalid_field(where, "merges",
                         "entry '" + std::string(left) + " " + std::string(right) +
                             "' uses or makes a token missing from the vocab");
  }
  const auto rank = static_cast<int32_t>(merges_.size());
  merges_.try_emplace(pair_key(*left_id, *right_id), Merge{rank, *merged_id});
  return Status::ok_status();
}

std::optional<int32_t> HfBpe::token_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void HfBpe::reserve_ids(size_t size) {
  if (tokens_.size() < size) tokens_.resize(size);
}

void HfBpe::set_token(int32_t id, const std::string& token) {
  reserve_ids(static_cast<size_t>(id) + 1);
  if (tokens_[static_cast<size_t>(id)].empty()) tokens_[static_cast<size_t>(id)] = token;
}

const HfBpe::Merge* HfBpe::find_merge(int32_t left, int32_t right) const {
  const auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

std::vector<HfBpe::Symbol> HfBpe::initial_symbols(std::string_view word) const {
  std::vector<Symbol> symbols;
  bool last_was_unk = false;
  auto push = [&symbols](int32_t id) {
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, -1});
  };
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t length = utf8_step(word, pos).length_bytes;
    const std::string_view ch = word.substr(pos, length);
    pos += length;
    if (const auto id = token_id(ch)) {
      push(*id);
      last_was_unk = false;
      continue;
    }
    bool bytes_known = byte_fallback_;
    for (const char c : ch) bytes_known = bytes_known && byte_ids_[static_cast<uint8_t>(c)] >= 0;
    if (bytes_known) {
      for (const char c : ch) push(byte_ids_[static_cast<uint8_t>(c)]);
      last_was_unk = false;
    } else if (unk_id_) {
      if (!(fuse_unk_ && last_was_unk)) push(*unk_id_);
      last_was_unk = true;
    }
  }
  for (size_t i = 0; i + 1 < symbols.size(); ++i) symbols[i].next = static_cast<int32_t>(i + 1);
  return symbols;
}

void HfBpe::apply_merges(std::vector<Symbol>* symbols) const {
  std::vector<Symbol>& s = *symbols;
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto push_pair = [&](int32_t left) {
    if (left < 0 || s[static_cast<size_t>(left)].next < 0) return;
    const Symbol& a = s[static_cast<size_t>(left)];
    const Symbol& b = s[static_cast<size_t>(a.next)];
    if (const Merge* merge = find_merge(a.id, b.id)) queue.push({merge->rank, left, a.id, b.id});
  };
  for (size_t i = 0; i + 1 < s.size(); ++i) push_pair(static_cast<int32_t>(i));
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& a = s[static_cast<size_t>(top.left)];
    if (a.id != top.left_id || a.next < 0) continue;  // stale: merged away or changed
    Symbol& b = s[static_cast<size_t>(a.next)];
    if (b.id != top.right_id) continue;
    a.id = find_merge(top.left_id, top.right_id)->merged_id;
    a.next = b.next;
    if (b.next >= 0) s[static_cast<size_t>(b.next)].prev = top.left;
    b.id = -1;  // removed
    push_pair(a.prev);
    push_pair(top.left);
  }
}

void HfBpe::encode_word(std::string_view word, std::vector<int32_t>* ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const auto id = token_id(word)) {
      ids->push_back(*id);
      return;
    }
  }
  std::vector<Symbol> symbols = initial_symbols(word);
  apply_merges(&symbols);
  for (const Symbol& symbol : symbols) {
    if (symbol.id >= 0) ids->push_back(symbol.id);
  }
}

}  // namespace plimsoll::hf
