// Byte quantities as people and Kubernetes write them: parse "12Gi", "512M",
// "1.5GiB", "1073741824"; format as "1.50 GiB".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace plimsoll {

inline constexpr int64_t kKiB = 1024;
inline constexpr int64_t kMiB = 1024 * kKiB;
inline constexpr int64_t kGiB = 1024 * kMiB;

// Decimal suffixes k, M, G, T (and KB, MB, GB, TB) are powers of 1000;
// binary suffixes Ki, Mi, Gi, Ti (and KiB, MiB, GiB, TiB) powers of 1024.
// A bare number is bytes. Errors name the text.
Result<int64_t> parse_bytes(std::string_view text);
// "512 B", "1.25 KiB", "12.00 GiB"
std::string format_bytes(int64_t bytes);

}  // namespace plimsoll
