// Pre-tokenizer implementations. Split behaviors follow HF tokenizers'
// SplitDelimiterBehavior; ByteLevel maps bytes to GPT-2's alphabet last.
#include "tokenizer/hf_pre_tokenizer.h"

#include "tokenizer/hf_byte_level.h"
#include "tokenizer/hf_normalizer.h"
#include "tokenizer/hf_regex.h"

namespace plimsoll::hf {
namespace {

enum class Behavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext };

struct Span {
  size_t begin;
  size_t end;
  bool is_match;
};

// The text cut into alternating gaps and matches, in order.
std::vector<Span> spans_of(const HfRegex& regex, std::string_view text, bool invert) {
  std::vector<Span> spans;
  size_t pos = 0;
  for (const ByteRange& m : regex.find_all(text)) {
    if (m.begin > pos) spans.push_back({pos, m.begin, invert});
    spans.push_back({m.begin, m.end, !invert});
    pos = m.end;
  }
  if (pos < text.size()) spans.push_back({pos, text.size(), invert});
  return spans;
}

// Splits one piece; the parts keep at_text_start only for the first.
void split_piece(const PreToken& piece, const HfRegex& regex, Behavior behavior, bool invert,
                 std::vector<PreToken>* out) {
  const std::string_view text = piece.text;
  std::vector<std::string> parts;
  bool glue_to_next = false;
  for (const Span& span : spans_of(regex, text, invert)) {
    const std::string_view part = text.substr(span.begin, span.end - span.begin);
    if (span.is_match && behavior == Behavior::kRemoved) continue;
    if (span.is_match && behavior == Behavior::kMergedWithPrevious && !parts.empty()) {
      parts.back().append(part);
      continue;
    }
    if (glue_to_next) {
      parts.back().append(part);
      glue_to_next = false;
    } else {
      parts.emplace_back(part);
    }
    glue_to_next = span.is_match && behavior == Behavior::kMergedWithNext;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool at_start = piece.at_text_start && i == 0 && text.starts_with(parts[i]);
    out->push_back({std::move(parts[i]), at_start});
  }
}

class Split final : public PreTokenizer {
 public:
  Split(HfRegex regex, Behavior behavior, bool invert)
      : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<PreToken>* pieces) const override {
    std::vector<PreToken> out;
    for (const PreToken& piece : *pieces) split_piece(piece, regex_, behavior_, invert_, &out);
    *pieces = std::move(out);
  }

 private:
  HfRegex regex_;
  Behavior behavior_;
  bool invert_;
};

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, std::optional<HfRegex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}
  void pre_tokenize(std::vector<PreToken>* pieces) const override {
    std::vector<PreToken> split;
    for (PreToken& piece : *pieces) {
      if (add_prefix_space_ && !piece.text.starts_with(' ')) piece.text = " " + piece.text;
      if (regex_) {
        split_piece(piece, *regex_, Behavior::kIsolated, false, &split);
      } else {
        split.push_back(std::move(piece));
      }
    }
    for (PreToken& piece : split) piece.text = bytes_to_byte_level(piece.text);
    *pieces = std::move(split);
  }

 private:
  bool add_prefix_space_;
  std::optional<HfRegex> regex_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(std::string replacement, PrependScheme scheme, bool split, HfRegex splitter)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split),
        splitter_(std::move(splitter)) {}
  void pre_tokenize(std::vector<PreToken>* pieces) const override {
    std::vector<PreToken> out;
    for (PreToken& piece : *pieces) {
      piece.text = replace_spaces(piece.text);
      const bool prepend = scheme_ == PrependScheme::kAlways ||
                           (scheme_ == PrependScheme::kFirst && piece.at_text_start);
      if (prepend && !piece.text.starts_with(replacement_)) piece.text = replacement_ + piece.text;
      if (split_) {
        split_piece(piece, splitter_, Behavior::kMergedWithNext, false, &out);
      } else {
        out.push_back(std::move(piece));
      }
    }
    *pieces = std::move(out);
  }

 private:
  std::string replace_spaces(std::string_view text) const {
    std::string out;
    for (const char c : text) {
      if (c == ' ') {
        out += replacement_;
      } else {
        out += c;
      }
    }
    return out;
  }

  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
  HfRegex splitter_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<PreToken>* pieces) const override {
    for (const auto& part : parts_) part->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

using PreTokenizerPtr = std::unique_ptr<PreTokenizer>;

Result<Behavior> parse_behavior(const Json& json, const std::string& where) {
  PLIMSOLL_ASSIGN(const std::string name, get_string(json, "behavior", where));
  if (name == "Isolated") return Behavior::kIsolated;
  if (name == "Removed") return Behavior::kRemoved;
  if (name == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::kMergedWithNext;
  return unsupported_value(where, "behavior", name);
}

Result<PreTokenizerPtr> make_split(const Json& json, const std::string& where) {
  PLIMSOLL_ASSIGN(HfRegex regex, compile_pattern(json, where));
  PLIMSOLL_ASSIGN(const Behavior behavior, parse_behavior(json, where));
  PLIMSOLL_ASSIGN(const bool invert, get_bool_or(json, "invert", false, where));
  return PreTokenizerPtr(std::make_unique<Split>(std::move(regex), behavior, invert));
}

Result<PreTokenizerPtr> make_byte_level(const Json& json, const std::string& where) {
  PLIMSOLL_ASSIGN(const bool add_prefix_space, get_bool_or(json, "add_prefix_space", true, where));
  PLIMSOLL_ASSIGN(const bool use_regex, get_bool_or(json, "use_regex", true, where));
  std::optional<HfRegex> regex;
  if (use_regex) {
    PLIMSOLL_ASSIGN(regex, HfRegex::compile(kGpt2Pattern, false, where));
  }
  return PreTokenizerPtr(std::make_unique<ByteLevel>(add_prefix_space, std::move(regex)));
}

Result<PrependScheme> parse_prepend_scheme(const Json& json, const std::string& where) {
  if (find_member(json, "prepend_scheme") == nullptr) {  // older files: add_prefix_space
    PLIMSOLL_ASSIGN(const bool add, get_bool_or(json, "add_prefix_space", true, where));
    return add ? PrependScheme::kAlways : PrependScheme::kNever;
  }
  PLIMSOLL_ASSIGN(const std::string name, get_string(json, "prepend_scheme", where));
  if (name == "always") return PrependScheme::kAlways;
  if (name == "first") return PrependScheme::kFirst;
  if (name == "never") return PrependScheme::kNever;
  return unsupported_value(where, "prepend_scheme", name);
}

Result<PreTokenizerPtr> make_metaspace(const Json& json, const std::string& where) {
  PLIMSOLL_ASSIGN(std::string replacement, get_string_or(json, "replacement", "\xE2\x96\x81", where));
  PLIMSOLL_ASSIGN(const PrependScheme scheme, parse_prepend_scheme(json, where));
  PLIMSOLL_ASSIGN(const bool split, get_bool_or(json, "split", true, where));
  PLIMSOLL_ASSIGN(HfRegex splitter, HfRegex::compile(replacement, /*literal=*/true, where));
  return PreTokenizerPtr(
      std::make_unique<Metaspace>(std::move(replacement), scheme, split, std::move(splitter)));
}

Result<PreTokenizerPtr> make_digits(const Json& json, const std::string& where) {
  PLIMSOLL_ASSIGN(const bool individual, get_bool_or(json, "individual_digits", false, where));
  PLIMSOLL_ASSIGN(HfRegex regex, HfRegex::compile(individual ? "\\p{N}" : "\\p{N}+", false, where));
  return PreTokenizerPtr(std::make_unique<Split>(std::move(regex), Behavior::kIsolated, false));
}

Result<PreTokenizerPtr> make_sequence(const Json& json, const std::string& where) {
  const Json* list = find_member(json, "pretokenizers");
  if (list == nullptr || !list->is_array()) {
    return invalid_field(where, "pretokenizers", "is not a list");
  }
  std::vector<PreTokenizerPtr> parts;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string item = field_name(where, "pretokenizers") + "[" + std::to_string(i) + "]";
    PLIMSOLL_ASSIGN(auto part, make_pre_tokenizer((*list)[i], item));
    parts.push_back(std::move(part));
  }
  return PreTokenizerPtr(std::make_unique<Sequence>(std::move(parts)));
}

}  // namespace

Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const Json& json, const std::string& where) {
  PLIMSOLL_ASSIGN(const std::string type, get_string(json, "type", where));
  if (type == "Split") return make_split(json, where);
  if (type == "ByteLevel") return make_byte_level(json, where);
  if (type == "Metaspace") return make_metaspace(json, where);
  if (type == "Digits") return make_digits(json, where);
  if (type == "Sequence") return make_sequence(json, where);
  return unsupported_value(where, "type", type);
}

}  // namespace plimsoll::hf
