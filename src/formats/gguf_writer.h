// GgufWriter: builds a GGUF v3 file from metadata and tensors (bytes or a
// producer callback) and writes it atomically (path.tmp, then rename).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "formats/gguf.h"

namespace plimsoll {

class GgufWriter {
 public:
  // Fills `out` (exactly the tensor's byte size) with the tensor's data; called
  // once, during write(), so only one tensor is in memory at a time.
  using TensorProducer = std::function<Status(std::span<std::byte> out)>;

  // Sets a metadata value (any GgufValue, arrays nested); setting a key again
  // replaces its value, keeping its position. "general.alignment" is reserved
  // (the writer always aligns to 32): kInvalidArgument.
  Status set(const std::string& key, GgufValue value);

  // Adds a tensor; `shape` is outermost first (as TensorView), stored reversed
  // as GGUF's ne. Checks: unique name < 64 bytes, 1..4 positive dims, row length
  // a multiple of the dtype's block, bytes.size() matching. `bytes` is not
  // copied: it must stay valid until write() returns.
  Status add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                    std::span<const std::byte> bytes);
  Status add_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                    TensorProducer producer);

  // Writes path + ".tmp", flushes it to disk, renames it to path. On error the
  // temporary file is removed and path is untouched. Errors: kIo naming the path.
  Status write(const std::string& path) const;

  // The same file as bytes in memory (tests, fuzz seeds: small models only).
  Result<std::vector<std::byte>> to_bytes() const;

  static constexpr int64_t kAlignmentBytes = kGgufDefaultAlignmentBytes;

 private:
  struct Tensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    int64_t n_bytes;
    int64_t offset_bytes;  // in the data section
    std::span<const std::byte> bytes;
    TensorProducer producer;
  };
  Result<int64_t> check_tensor(const std::string& name, DType dtype,
                               const std::vector<int64_t>& shape) const;
  Status push_tensor(Tensor t);
  std::string header_bytes() const;
  using Sink = std::function<Status(const std::byte* data, size_t n)>;
  Status emit(const Sink& sink) const;

  std::vector<GgufKv> metadata_;
  std::vector<Tensor> tensors_;
  int64_t data_bytes_ = 0;
};

}  // namespace plimsoll
