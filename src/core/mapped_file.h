// MappedFile: a whole file's bytes, read-only: memory-mapped, or copied into
// anonymous memory backed by transparent huge pages (see FileBacking).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/result.h"

namespace plimsoll {

enum class FileBacking {
  kMapped,         // mmap of the file: pages come from the page cache as touched
  // The file read once into 2 MiB-aligned anonymous memory with MADV_HUGEPAGE:
  // weight streams then cross no 4 KiB page boundaries (fewer TLB misses, no
  // prefetch stops). Falls back to kMapped where THP is off ("never").
  kHugePageCopy,
};

// Whether the kernel gives anonymous huge pages on request
// (/sys/kernel/mm/transparent_hugepage/enabled is "always" or "madvise").
bool huge_pages_available();

class MappedFile {
 public:
  static Result<std::shared_ptr<MappedFile>> open(const std::string& path,
                                                  FileBacking backing = FileBacking::kMapped);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  int64_t size_bytes() const { return size_bytes_; }
  const std::string& path() const { return path_; }
  FileBacking backing() const { return backing_; }

 private:
  MappedFile(std::string path, const std::byte* data, int64_t size_bytes, void* map_base, size_t map_bytes,
             FileBacking backing)
      : path_(std::move(path)),
        data_(data),
        size_bytes_(size_bytes),
        map_base_(map_base),
        map_bytes_(map_bytes),
        backing_(backing) {}
  std::string path_;
  const std::byte* data_ = nullptr;
  int64_t size_bytes_ = 0;
  void* map_base_ = nullptr;  // what munmap releases
  size_t map_bytes_ = 0;
  FileBacking backing_ = FileBacking::kMapped;
};

}  // namespace plimsoll
