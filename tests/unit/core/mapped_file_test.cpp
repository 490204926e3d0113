#include "core/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace plimsoll {
namespace {

std::string write_temp(const std::vector<char>& bytes) {
  std::string path = (std::filesystem::temp_directory_path() / ("plimsoll_mapped_" + std::to_string(::getpid()))).string();
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// Both backings hold the file's exact bytes; the huge-page copy is 2 MiB aligned
// and says so (where THP is on), and survives the file's removal.
TEST(MappedFile, HugePageCopyHoldsTheSameBytesAsTheMapping) {
  std::vector<char> bytes((size_t{5} << 20) + 123);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  const std::string path = write_temp(bytes);
  auto mapped = MappedFile::open(path, FileBacking::kMapped);
  auto copied = MappedFile::open(path, FileBacking::kHugePageCopy);
  std::filesystem::remove(path);
  ASSERT_TRUE(mapped.ok()) << mapped.error().message;
  ASSERT_TRUE(copied.ok()) << copied.error().message;
  ASSERT_EQ((*copied)->size_bytes(), static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(0, std::memcmp((*copied)->data(), bytes.data(), bytes.size()));
  EXPECT_EQ(0, std::memcmp((*mapped)->data(), bytes.data(), bytes.size()));
  EXPECT_EQ((*mapped)->backing(), FileBacking::kMapped);
  if (huge_pages_available()) {
    EXPECT_EQ((*copied)->backing(), FileBacking::kHugePageCopy);
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*copied)->data()) % (2u << 20), 0u);
  }
}

TEST(MappedFile, MissingFileNamesThePath) {
  auto r = MappedFile::open("/nonexistent/plimsoll/model.gguf", FileBacking::kHugePageCopy);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/nonexistent/plimsoll/model.gguf"), std::string::npos);
}

}  // namespace
}  // namespace plimsoll
