// SHA-256 (OpenSSL), lower-case hex: of a file (the etag of an LFS blob) or of
// bytes (an API key, kept only as its hash).
#pragma once

#include <string>

#include "core/result.h"

namespace plimsoll {

Result<std::string> sha256_file(const std::string& path);
std::string sha256_hex(const std::string& bytes);

}  // namespace plimsoll
