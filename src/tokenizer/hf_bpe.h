// HfBpe: the BPE model of tokenizer.json (vocab, ranked merges, byte_fallback,
// ignore_merges, unk/fuse_unk); turns one pre-tokenized word into ids.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "tokenizer/hf_json.h"

namespace plimsoll::hf {

class HfBpe {
 public:
  // From the "model" object; `where` names it in errors ("tokenizer.json: model").
  static Result<HfBpe> load(const Json& model, const std::string& where);

  // Appends the ids of one word (text in the model's alphabet).
  void encode_word(std::string_view word, std::vector<int32_t>* ids) const;

  std::optional<int32_t> token_id(std::string_view token) const;
  // id -> token string; ids without a vocab entry have "".
  const std::vector<std::string>& tokens() const { return tokens_; }
  // Makes room for ids up to `size` - 1 (added tokens beyond the vocab).
  void reserve_ids(size_t size);
  void set_token(int32_t id, const std::string& token);

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };
  struct Symbol {
    int32_t id;
    int32_t prev;  // index of the symbol before, -1 at the start
    int32_t next;  // index of the symbol after, -1 at the end
  };

  Status load_vocab(const Json& vocab, const std::string& where);
  Status load_merges(const Json& merges, const std::string& where);
  Status add_merge(std::string_view left, std::string_view right, const std::string& where);
  std::vector<Symbol> initial_symbols(std::string_view word) const;
  void apply_merges(std::vector<Symbol>* symbols) const;
  const Merge* find_merge(int32_t left, int32_t right) const;

  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> vocab_;
  std::vector<std::string> tokens_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left << 32 | right) -> merge
  std::optional<int32_t> unk_id_;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  int32_t byte_ids_[256] = {};
};

}  // namespace plimsoll::hf
