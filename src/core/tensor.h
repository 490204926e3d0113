// TensorView: a named, typed, shaped window onto bytes someone else owns
// (an mmap'd model file or a buffer). Plain data; never owns memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace plimsoll {

// Shapes are listed outermost first: a weight matrix is {rows, cols} and each
// row of `cols` elements is contiguous (GGUF lists the same tensor as
// ne = [cols, rows], fastest first; readers reverse it).
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;
  int64_t n_bytes = 0;

  int64_t n_elems() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t rows() const { return shape.size() < 2 ? 1 : n_elems() / shape.back(); }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  int64_t row_bytes() const { return dtype_row_bytes(dtype, cols()); }
  const std::byte* row(int64_t r) const { return data + r * row_bytes(); }
  const float* f32() const { return reinterpret_cast<const float*>(data); }
};

std::string shape_to_string(const std::vector<int64_t>& shape);  // "[512, 64]"

}  // namespace plimsoll
