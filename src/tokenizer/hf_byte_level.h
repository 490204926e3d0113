// GPT-2's byte-level alphabet: each byte as one printable character ("Ġ" for
// space), used by the ByteLevel pre-tokenizer and decoder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace plimsoll::hf {

// The byte-level text of raw bytes (each byte -> its UTF-8 encoded character).
std::string bytes_to_byte_level(std::string_view bytes);
// Raw bytes of byte-level text; nullopt when a character is outside the alphabet.
std::optional<std::string> byte_level_to_bytes(std::string_view text);

}  // namespace plimsoll::hf
