// The byte <-> character tables of GPT-2's bytes_to_unicode(): printable
// Latin-1 bytes map to themselves, the other 68 to U+0100 onwards.
#include "tokenizer/hf_byte_level.h"

#include <array>
#include <unordered_map>

namespace plimsoll::hf {
namespace {

bool keeps_own_code(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

std::string utf8_of(uint32_t code_point) {
  std::string out;
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else {  // the table stays below U+0800
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
  return out;
}

struct Tables {
  std::array<std::string, 256> byte_to_text;
  std::unordered_map<std::string, uint8_t> text_to_byte;
  Tables() {
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const uint32_t code = keeps_own_code(b) ? static_cast<uint32_t>(b) : next++;
      byte_to_text[static_cast<size_t>(b)] = utf8_of(code);
      text_to_byte.emplace(byte_to_text[static_cast<size_t>(b)], static_cast<uint8_t>(b));
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out += tables().byte_to_text[static_cast<uint8_t>(c)];
  return out;
}

std::optional<std::string> byte_level_to_bytes(std::string_view text) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    const auto lead = static_cast<uint8_t>(text[pos]);
    const size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : 0;
    if (length == 0 || pos + length > text.size()) return std::nullopt;
    const auto it = tables().text_to_byte.find(std::string(text.substr(pos, length)));
    if (it == tables().text_to_byte.end()) return std::nullopt;
    out += static_cast<char>(it->second);
    pos += length;
  }
  return out;
}

}  // namespace plimsoll::hf
