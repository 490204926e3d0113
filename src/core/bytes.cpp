// Parsing and formatting of byte quantities.
#include "core/bytes.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace plimsoll {
namespace {

struct Suffix {
  std::string_view text;
  double factor;
};

constexpr Suffix kSuffixes[] = {
    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    {"Ki", 1024.0},  {"Mi", 1048576.0},  {"Gi", 1073741824.0},  {"Ti", 1099511627776.0},
    {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
    {"k", 1e3},      {"K", 1e3},         {"M", 1e6},            {"G", 1e9},
    {"T", 1e12},     {"B", 1.0},
};

}  // namespace

Result<int64_t> parse_bytes(std::string_view text) {
  const std::string s(text);
  auto bad = [&] {
    return make_error(ErrorCode::kInvalidArgument,
                      "'" + s + "' is not a byte size (examples: 1073741824, 512Mi, 12GiB, 1.5G)");
  };
  if (s.empty()) return bad();
  char* end = nullptr;
  const double number = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(number) || number < 0) return bad();
  std::string_view rest(end);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  double factor = 1.0;
  if (!rest.empty()) {
    bool found = false;
    for (const Suffix& suffix : kSuffixes) {
      if (rest == suffix.text) {
        factor = suffix.factor;
        found = true;
        break;
      }
    }
    if (!found) return bad();
  }
  const double bytes = number * factor;
  if (bytes >= 9.2e18) return bad();
  return static_cast<int64_t>(std::llround(bytes));
}

std::string format_bytes(int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes < kKiB && bytes > -kKiB) {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  } else if (std::fabs(b) < static_cast<double>(kMiB)) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", b / static_cast<double>(kKiB));
  } else if (std::fabs(b) < static_cast<double>(kGiB)) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / static_cast<double>(kMiB));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / static_cast<double>(kGiB));
  }
  return buf;
}

}  // namespace plimsoll
