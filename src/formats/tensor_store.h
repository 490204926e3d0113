// TensorStore: the named weight tensors of one model and the memory that
// backs them (mmap'd files or owned buffers), kept alive together.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/result.h"
#include "core/tensor.h"

namespace plimsoll {

class TensorStore {
 public:
  // Keeps `file` alive as long as the store lives (views point into it).
  void keep_alive(std::shared_ptr<MappedFile> file) { files_.push_back(std::move(file)); }
  // Takes ownership of a buffer that views will point into.
  const std::byte* adopt(std::vector<std::byte> buffer);

  // Fails (kInvalidFile) on a duplicate name.
  Status add(TensorView view);

  const TensorView* find(const std::string& name) const;
  // The tensor, or kNotFound naming it; with `shape` non-empty also checks
  // the shape (kInvalidFile naming expected and actual).
  Result<const TensorView*> get(const std::string& name,
                                const std::vector<int64_t>& shape = {}) const;

  const std::vector<TensorView>& tensors() const { return tensors_; }
  int64_t total_bytes() const;
  // Bytes of the tensors that are already resident as private memory: in
  // adopted buffers or in files read into huge pages (FileBacking::kHugePageCopy).
  // They show in the process's RSS after loading, and the plan counts them as
  // weights, so a runtime measured from RSS leaves them out.
  int64_t resident_copy_bytes() const;

 private:
  std::vector<std::shared_ptr<MappedFile>> files_;
  std::vector<std::unique_ptr<std::vector<std::byte>>> buffers_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t> index_;
};

}  // namespace plimsoll
