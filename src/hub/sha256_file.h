// SHA-256 of a file (OpenSSL), lower-case hex: the etag of an LFS blob.
#pragma once

#include <string>

#include "core/result.h"

namespace plimsoll::hub {

Result<std::string> sha256_file(const std::string& path);
std::string sha256_hex(const std::string& bytes);

}  // namespace plimsoll::hub
