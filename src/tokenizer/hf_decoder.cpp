// Decoder implementations, after HF tokenizers' decoders/*.rs, except that
// byte results stay raw (no U+FFFD) so streaming can complete characters later.
#include "tokenizer/hf_decoder.h"

#include "tokenizer/hf_byte_level.h"
#include "tokenizer/hf_normalizer.h"
#include "tokenizer/hf_regex.h"

namespace plimsoll::hf {
namespace {

using DecoderPtr = std::unique_ptr<Decoder>;

class ByteLevel final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>* tokens) const override {
    for (std::string& token : *tokens) {
      if (auto bytes = byte_level_to_bytes(token)) token = std::move(*bytes);
    }
  }
};

class Replace final : public Decoder {
 public:
  Replace(HfRegex pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>* tokens) const override {
    for (std::string& token : *tokens) {
      std::string out;
      size_t pos = 0;
      for (const ByteRange& match : pattern_.find_all(token)) {
        out.append(token, pos, match.begin - pos).append(content_);
        pos = match.end;
      }
      out.append(token, pos);
      token = std::move(out);
    }
  }

 private:
  HfRegex pattern_;
  std::string content_;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

class ByteFallback final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>* tokens) const override {
    for (std::string& token : *tokens) {
      if (token.size() != 6 || !token.starts_with("<0x") || token[5] != '>') continue;
      const int hi = hex_digit(token[3]);
      const int lo = hex_digit(token[4]);
      if (hi >= 0 && lo >= 0) token = std::string(1, static_cast<char>(hi * 16 + lo));
    }
  }
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>* tokens) const override {
    std::string joined;
    for (const std::string& token : *tokens) joined += token;
    tokens->assign(1, std::move(joined));
  }
};

class Strip final : public Decoder {
 public:
  Strip(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>* tokens) const override {
    for (std::string& token : *tokens) {
      for (size_t i = 0; i < start_ && token.starts_with(content_); ++i) token.erase(0, content_.size());
      for (size_t i = 0; i < stop_ && token.ends_with(content_); ++i) {
        token.erase(token.size() - content_.size());
      }
    }
  }

 private:
  std::string content_;
  size_t start_;
  size_t stop_;
};

class Metaspace final : public Decoder {
 public:
  Metaspace(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>* tokens) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      std::string& token = (*tokens)[i];
      std::string out;
      size_t pos = 0;
      for (size_t hit = token.find(replacement_); hit != std::string::npos;
           hit = token.find(replacement_, pos)) {
        out.append(token, pos, hit - pos);
        if (!(i == 0 && hit == 0 && strip_first_)) out += ' ';
        pos = hit + replacement_.size();
      }
      out.append(token, pos);
      token = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<DecoderPtr> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>* tokens) const override {
    for (const auto& part : parts_) part->decode_chain(tokens);
  }

 private:
  std::vector<DecoderPtr> parts_;
};

Result<DecoderPtr> make_replace(const Json& json, const std::string& where) {
  PLIMSOLL_ASSIGN(HfRegex pattern, compile_pattern(json, where));
  PLIMSOLL_ASSIGN(std::string content, get_string(json, "content", where));
  return DecoderPtr(std::make_unique<Replace>(std::move(pattern), std::move(content)));
}

Result<DecoderPtr> make_strip(const Json& json, const std::string& where) {
  PLIMSOLL_ASSIGN(std::string content, get_string(json, "content", where));
  PLIMSOLL_ASSIGN(const int64_t start, get_int_or(json, "start", 0, where));
  PLIMSOLL_ASSIGN(const int64_t stop, get_int_or(json, "stop", 0, where));
  if (start < 0 || stop < 0) return invalid_field(where, "start", "or stop is negative");
  return DecoderPtr(std::make_unique<Strip>(std::move(content), static_cast<size_t>(start),
                                            static_cast<size_t>(stop)));
}

Result<DecoderPtr> make_metaspace(const Json& json, const std::string& where) {
  PLIMSOLL_ASSIGN(std::string replacement, get_string_or(json, "replacement", "\xE2\x96\x81", where));
  bool strip_first = true;
  if (find_member(json, "prepend_scheme") != nullptr) {
    PLIMSOLL_ASSIGN(const std::string scheme, get_string(json, "prepend_scheme", where));
    strip_first = scheme != "never";
  } else {
    PLIMSOLL_ASSIGN(strip_first, get_bool_or(json, "add_prefix_space", true, where));
  }
  return DecoderPtr(std::make_unique<Metaspace>(std::move(replacement), strip_first));
}

Result<DecoderPtr> make_sequence(const Json& json, const std::string& where) {
  const Json* list = find_member(json, "decoders");
  if (list == nullptr || !list->is_array()) return invalid_field(where, "decoders", "is not a list");
  std::vector<DecoderPtr> parts;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string item = field_name(where, "decoders") + "[" + std::to_string(i) + "]";
    PLIMSOLL_ASSIGN(auto part, make_decoder((*list)[i], item));
    parts.push_back(std::move(part));
  }
  return DecoderPtr(std::make_unique<Sequence>(std::move(parts)));
}

}  // namespace

Result<std::unique_ptr<Decoder>> make_decoder(const Json& json, const std::string& where) {
  PLIMSOLL_ASSIGN(const std::string type, get_string(json, "type", where));
  if (type == "ByteLevel") return DecoderPtr(std::make_unique<ByteLevel>());
  if (type == "ByteFallback") return DecoderPtr(std::make_unique<ByteFallback>());
  if (type == "Fuse") return DecoderPtr(std::make_unique<Fuse>());
  if (type == "Replace") return make_replace(json, where);
  if (type == "Strip") return make_strip(json, where);
  if (type == "Metaspace") return make_metaspace(json, where);
  if (type == "Sequence") return make_sequence(json, where);
  return unsupported_value(where, "type", type);
}

}  // namespace plimsoll::hf
