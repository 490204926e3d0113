#include "core/bytes.h"

#include <gtest/gtest.h>

namespace plimsoll {
namespace {

TEST(Bytes, ParsesKubernetesAndHumanSpellings) {
  EXPECT_EQ(*parse_bytes("1073741824"), 1073741824);
  EXPECT_EQ(*parse_bytes("12Gi"), 12 * kGiB);
  EXPECT_EQ(*parse_bytes("12GiB"), 12 * kGiB);
  EXPECT_EQ(*parse_bytes("512Mi"), 512 * kMiB);
  EXPECT_EQ(*parse_bytes("129M"), 129000000);
  EXPECT_EQ(*parse_bytes("1.5G"), 1500000000);
  EXPECT_EQ(*parse_bytes("256 MiB"), 256 * kMiB);
  EXPECT_EQ(*parse_bytes("100k"), 100000);
}

TEST(Bytes, RejectsGarbageNamingIt) {
  for (const char* s : {"", "abc", "12Qi", "-5G", "1e30", "12 G i"}) {
    auto r = parse_bytes(s);
    ASSERT_FALSE(r.ok()) << s;
    EXPECT_NE(r.error().message.find(std::string("'") + s + "'"), std::string::npos);
  }
}

TEST(Bytes, Formats) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(12 * kGiB), "12.00 GiB");
}

}  // namespace
}  // namespace plimsoll
