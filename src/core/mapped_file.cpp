// MappedFile: mmap of a file, or its bytes read into huge-page-backed memory.
#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

namespace plimsoll {
namespace {

constexpr size_t kHugePageBytes = size_t{2} << 20;

Error io_error(const std::string& path, const char* what, int err) {
  return make_error(ErrorCode::kIo, path + ": " + what + ": " + std::strerror(err));
}

// Reads size bytes of fd into 2 MiB-aligned anonymous memory advised
// MADV_HUGEPAGE; the file's page-cache pages are dropped behind the read.
// *base/*bytes: the mapping to release; *data: the aligned copy.
Status read_into_huge_pages(int fd, const std::string& path, int64_t size, void** base, size_t* bytes,
                            const std::byte** data) {
  const size_t len = (static_cast<size_t>(size) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  *bytes = len + kHugePageBytes;  // room to align the start
  *base = ::mmap(nullptr, *bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (*base == MAP_FAILED) return io_error(path, "cannot allocate memory for the weights", errno);
  const auto addr = reinterpret_cast<uintptr_t>(*base);
  auto* dst = reinterpret_cast<char*>((addr + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes);
  ::madvise(dst, len, MADV_HUGEPAGE);  // advice only: without it the copy still works
  constexpr int64_t kChunk = int64_t{64} << 20;
  for (int64_t off = 0; off < size;) {
    const ssize_t n = ::pread(fd, dst + off, static_cast<size_t>(std::min(kChunk, size - off)), off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EIO;
      ::munmap(*base, *bytes);
      return io_error(path, "cannot read", e);
    }
    ::posix_fadvise(fd, off, n, POSIX_FADV_DONTNEED);
    off += n;
  }
  ::mprotect(dst, len, PROT_READ);
  *data = reinterpret_cast<const std::byte*>(dst);
  return {};
}

}  // namespace

bool huge_pages_available() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  return line.find("[always]") != std::string::npos || line.find("[madvise]") != std::string::npos;
}

Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path, FileBacking backing) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return io_error(path, "cannot stat", e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(ErrorCode::kInvalidFile, path + ": not a regular file");
  }
  const int64_t size = st.st_size;
  if (size == 0) {
    ::close(fd);
    return std::shared_ptr<MappedFile>(new MappedFile(path, nullptr, 0, nullptr, 0, FileBacking::kMapped));
  }
  if (backing == FileBacking::kHugePageCopy && huge_pages_available()) {
    void* base = nullptr;
    size_t bytes = 0;
    const std::byte* data = nullptr;
    const Status read = read_into_huge_pages(fd, path, size, &base, &bytes, &data);
    ::close(fd);
    if (!read.ok()) return read.error();
    return std::shared_ptr<MappedFile>(new MappedFile(path, data, size, base, bytes, FileBacking::kHugePageCopy));
  }
  void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) return io_error(path, "cannot mmap", e);
  return std::shared_ptr<MappedFile>(new MappedFile(path, static_cast<const std::byte*>(p), size, p,
                                                    static_cast<size_t>(size), FileBacking::kMapped));
}

MappedFile::~MappedFile() {
  if (map_base_) ::munmap(map_base_, map_bytes_);
}

}  // namespace plimsoll
