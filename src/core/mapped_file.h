// MappedFile: a read-only memory mapping of a whole file (RAII). Model weights
// are read through it, so they are paged in by the kernel and count as
// file-backed (reclaimable) memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/result.h"

namespace plimsoll {

class MappedFile {
 public:
  static Result<std::shared_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  int64_t size_bytes() const { return size_bytes_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const std::byte* data, int64_t size_bytes)
      : path_(std::move(path)), data_(data), size_bytes_(size_bytes) {}
  std::string path_;
  const std::byte* data_ = nullptr;
  int64_t size_bytes_ = 0;
};

}  // namespace plimsoll
