// Normalizer implementations; Unicode forms through ICU's unorm2 (UTF-16 round
// trip), Replace through HfRegex, everything else plain string work.
#include "tokenizer/hf_normalizer.h"

#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <vector>

#include "tokenizer/hf_regex.h"

namespace plimsoll::hf {
namespace {

const UNormalizer2* icu_normalizer(std::string_view form, UErrorCode* status) {
  if (form == "NFC") return unorm2_getNFCInstance(status);
  if (form == "NFD") return unorm2_getNFDInstance(status);
  if (form == "NFKC") return unorm2_getNFKCInstance(status);
  return unorm2_getNFKDInstance(status);
}

Result<std::u16string> to_utf16(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  int32_t length = 0;
  u_strFromUTF8(nullptr, 0, &length, text.data(), static_cast<int32_t>(text.size()), &status);
  if (status != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(status)) {
    return make_error(ErrorCode::kInvalidArgument, "normalizer: text is not valid UTF-8");
  }
  std::u16string out(static_cast<size_t>(length), u'\0');
  status = U_ZERO_ERROR;
  u_strFromUTF8(reinterpret_cast<UChar*>(out.data()), length, nullptr, text.data(),
                static_cast<int32_t>(text.size()), &status);
  if (U_FAILURE(status)) return make_error(ErrorCode::kInvalidArgument, "normalizer: bad UTF-8");
  return out;
}

Result<std::string> to_utf8(const std::u16string& text) {
  UErrorCode status = U_ZERO_ERROR;
  int32_t length = 0;
  const auto* src = reinterpret_cast<const UChar*>(text.data());
  const auto n = static_cast<int32_t>(text.size());
  u_strToUTF8(nullptr, 0, &length, src, n, &status);
  std::string out(static_cast<size_t>(length), '\0');
  status = U_ZERO_ERROR;
  u_strToUTF8(out.data(), length, nullptr, src, n, &status);
  if (U_FAILURE(status)) return make_error(ErrorCode::kInternal, "normalizer: UTF-16 to UTF-8");
  return out;
}

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(std::string form) : form_(std::move(form)) {}
  std::string normalize(std::string_view text) const override {
    Result<std::string> out = unicode_normalize(text, form_);
    return out.ok() ? std::move(out).value() : std::string(text);
  }

 private:
  std::string form_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string normalize(std::string_view text) const override {
    return text.empty() ? std::string() : prefix_ + std::string(text);
  }

 private:
  std::string prefix_;
};

class Replace final : public Normalizer {
 public:
  Replace(HfRegex pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::string normalize(std::string_view text) const override {
    std::string out;
    size_t pos = 0;
    for (const ByteRange& match : pattern_.find_all(text)) {
      out.append(text.substr(pos, match.begin - pos)).append(content_);
      pos = match.end;
    }
    out.append(text.substr(pos));
    return out;
  }

 private:
  HfRegex pattern_;
  std::string content_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  std::string normalize(std::string_view text) const override {
    std::string out(text);
    for (const auto& part : parts_) out = part->normalize(out);
    return out;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

Result<std::unique_ptr<Normalizer>> make_sequence(const Json& json, const std::string& where) {
  const Json* list = find_member(json, "normalizers");
  if (list == nullptr || !list->is_array()) return invalid_field(where, "normalizers", "is not a list");
  std::vector<std::unique_ptr<Normalizer>> parts;
  for (size_t i = 0; i < list->size(); ++i) {
    PLIMSOLL_ASSIGN(auto part,
                    make_normalizer((*list)[i], field_name(where, "normalizers") + "[" +
                                                    std::to_string(i) + "]"));
    parts.push_back(std::move(part));
  }
  return std::unique_ptr<Normalizer>(std::make_unique<Sequence>(std::move(parts)));
}

}  // namespace

// {"String": "x"} or {"Regex": "x"}, as Replace and Split write patterns.
Result<HfRegex> compile_pattern(const Json& json, const std::string& where) {
  const Json* pattern = find_member(json, "pattern");
  if (pattern == nullptr) return invalid_field(where, "pattern", "is missing");
  const std::string name = field_name(where, "pattern");
  if (const Json* s = find_member(*pattern, "String"); s != nullptr && s->is_string()) {
    return HfRegex::compile(s->get<std::string>(), /*literal=*/true, name);
  }
  if (const Json* r = find_member(*pattern, "Regex"); r != nullptr && r->is_string()) {
    return HfRegex::compile(r->get<std::string>(), /*literal=*/false, name);
  }
  return invalid_field(where, "pattern", "is neither {\"String\": ...} nor {\"Regex\": ...}");
}

Result<std::string> unicode_normalize(std::string_view text, std::string_view form) {
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* normalizer = icu_normalizer(form, &status);
  if (U_FAILURE(status)) return make_error(ErrorCode::kInternal, "ICU normalizer unavailable");
  PLIMSOLL_ASSIGN(std::u16string utf16, to_utf16(text));
  const auto* src = reinterpret_cast<const UChar*>(utf16.data());
  const auto n = static_cast<int32_t>(utf16.size());
  const int32_t length = unorm2_normalize(normalizer, src, n, nullptr, 0, &status);
  if (status != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(status)) {
    return make_error(ErrorCode::kInternal, "ICU normalization failed");
  }
  std::u16string out(static_cast<size_t>(length), u'\0');
  status = U_ZERO_ERROR;
  unorm2_normalize(normalizer, src, n, reinterpret_cast<UChar*>(out.data()), length, &status);
  if (U_FAILURE(status)) return make_error(ErrorCode::kInternal, "ICU normalization failed");
  return to_utf8(out);
}

Result<std::unique_ptr<Normalizer>> make_normalizer(const Json& json, const std::string& where) {
  PLIMSOLL_ASSIGN(const std::string type, get_string(json, "type", where));
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    return std::unique_ptr<Normalizer>(std::make_unique<UnicodeForm>(type));
  }
  if (type == "Prepend") {
    PLIMSOLL_ASSIGN(std::string prefix, get_string(json, "prepend", where));
    return std::unique_ptr<Normalizer>(std::make_unique<Prepend>(std::move(prefix)));
  }
  if (type == "Replace") {
    PLIMSOLL_ASSIGN(HfRegex pattern, compile_pattern(json, where));
    PLIMSOLL_ASSIGN(std::string content, get_string(json, "content", where));
    return std::unique_ptr<Normalizer>(std::make_unique<Replace>(std::move(pattern), std::move(content)));
  }
  if (type == "Sequence") return make_sequence(json, where);
  return unsupported_value(where, "type", type);
}

}  // namespace plimsoll::hf
