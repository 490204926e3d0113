// Parsers turn absurd counts into errors before they allocate: a GGUF array's
// claimed length reserves no more than the bytes the file has left (it once
// reserved 4x the file for strings), and JSON side files past their size limit
// are refused unread. Allocation sizes are observed by replacing operator new.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <unistd.h>

#include "formats/gguf.h"
#include "formats/json_file.h"

namespace {

// The largest single operator-new request while `tracking` is set (this binary only).
std::atomic<bool> tracking{false};
std::atomic<size_t> largest_bytes{0};

void* allocate(size_t n) {
  if (tracking.load(std::memory_order_relaxed)) {
    size_t seen = largest_bytes.load(std::memory_order_relaxed);
    while (n > seen && !largest_bytes.compare_exchange_weak(seen, n)) {
    }
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(size_t n) { return allocate(n); }
void* operator new[](size_t n) { return allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace plimsoll {
namespace {

using Bytes = std::vector<std::byte>;

template <typename T>
void put(Bytes& b, T v) {
  const size_t at = b.size();
  b.resize(at + sizeof(v));
  std::memcpy(b.data() + at, &v, sizeof(v));
}

// A GGUF v3 file with one key 'k' holding an array of `elem` type that claims as
// many elements as the bytes after its count allow, followed by `tail_bytes` of 0xFF
// (a string length or element type no parser accepts): the claim passes the count
// check, the first element fails.
Bytes claiming_array(uint32_t elem, uint64_t min_elem_bytes, size_t tail_bytes) {
  Bytes b;
  for (char c : std::string("GGUF")) b.push_back(std::byte(c));
  put<uint32_t>(b, 3);
  put<uint64_t>(b, 0);  // tensors
  put<uint64_t>(b, 1);  // kvs
  put<uint64_t>(b, 1);
  b.push_back(std::byte('k'));
  put<uint32_t>(b, 9);  // array
  put<uint32_t>(b, elem);
  put<uint64_t>(b, tail_bytes / min_elem_bytes);
  b.resize(b.size() + tail_bytes, std::byte{0xFF});
  return b;
}

// header 24, key length 8 + 'k', value type 4, element type 4
constexpr size_t kCountOffset = 24 + 9 + 4 + 4;

struct Parsed {
  Result<GgufFile> result;
  size_t largest_allocation_bytes;
};

Parsed parse_tracked(const Bytes& b) {
  largest_bytes = 0;
  tracking = true;
  Result<GgufFile> r = parse_gguf({b.data(), b.size()}, "claims.gguf");
  tracking = false;
  return {std::move(r), largest_bytes.load()};
}

TEST(GgufBounds, AStringArrayClaimReservesNoMoreThanTheFile) {
  const Bytes b = claiming_array(8, 8, 1 << 20);  // claims 131,072 strings in 1 MiB
  Parsed p = parse_tracked(b);
  ASSERT_FALSE(p.result.ok());
  EXPECT_NE(p.result.error().message.find("claims.gguf: truncated: string value of 'k'"), std::string::npos)
      << p.result.error().message;
  // Reserving the claim was 131,072 x 32 bytes = 4 MiB, four times the file.
  EXPECT_LE(p.largest_allocation_bytes, b.size());
}

TEST(GgufBounds, ANestedArrayClaimReservesNoMoreThanTheFile) {
  const Bytes b = claiming_array(9, 12, 1 << 20);  // claims 87,381 arrays in 1 MiB
  Parsed p = parse_tracked(b);
  ASSERT_FALSE(p.result.ok());
  EXPECT_NE(p.result.error().message.find("unknown value type"), std::string::npos) << p.result.error().message;
  EXPECT_LE(p.largest_allocation_bytes, b.size());
}

TEST(GgufBounds, AClaimPastTheFileNamesKeyCountAndLimit) {
  Bytes b = claiming_array(8, 8, 64);
  const uint64_t nine = 9;  // 9 strings, where 64 bytes hold at most 8
  std::memcpy(b.data() + kCountOffset, &nine, sizeof(nine));
  Parsed p = parse_tracked(b);
  ASSERT_FALSE(p.result.ok());
  const std::string& m = p.result.error().message;
  for (const char* part : {"claims.gguf: ", "key 'k'", "claims 9 array elements of string", "64 bytes are left",
                           "at most 8"}) {
    EXPECT_NE(m.find(part), std::string::npos) << "'" << part << "' not in: " << m;
  }
}

TEST(GgufBounds, ALegitimateStringArrayStillParses) {
  Bytes b = claiming_array(8, 8, 0);
  b.resize(b.size() - 8);
  put<uint64_t>(b, 3);  // three strings
  for (const char* s : {"a", "", "xyz"}) {
    put<uint64_t>(b, std::strlen(s));
    for (const char* c = s; *c; ++c) b.push_back(std::byte(*c));
  }
  Parsed p = parse_tracked(b);
  ASSERT_TRUE(p.result.ok()) << p.result.error().message;
  auto a = p.result->get_array("k");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(std::get<std::vector<std::string>>((*a)->items), (std::vector<std::string>{"a", "", "xyz"}));
}

TEST(JsonFileBounds, AFileLargerThanTheLimitIsRefusedUnread) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("plimsoll-huge-config-" + std::to_string(::getpid()) + ".json")).string();
  {
    std::ofstream out(path, std::ios::binary);
    out << "{}";
  }
  std::filesystem::resize_file(path, static_cast<uintmax_t>(kMaxJsonFileBytes) + 1);  // sparse
  largest_bytes = 0;
  tracking = true;
  Result<JsonFile> r = read_json_file(path);
  tracking = false;
  std::filesystem::remove(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidFile);
  EXPECT_NE(r.error().message.find(path + ": 67108865 bytes, more than the 67108864"), std::string::npos)
      << r.error().message;
  EXPECT_LT(largest_bytes.load(), size_t{1} << 20);
}

}  // namespace
}  // namespace plimsoll
