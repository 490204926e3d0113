// Element types of tensors (float and block-quantized), with their GGUF (ggml)
// type ids and storage geometry. The one table every layer asks about sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace plimsoll {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kQ8_0,  // blocks of 32: f16 scale + 32 x int8
  kQ4_0,  // blocks of 32: f16 scale + 16 bytes of 4-bit values (offset 8)
  kQ4_K,  // super-blocks of 256 (llama.cpp k-quants)
  kQ5_K,
  kQ6_K,
  kQ8_K,  // activations-side k-quant type (f32 scale), readable for completeness
  kQ4_1,    // blocks of 32: f16 scale + f16 min + 16 bytes of 4-bit values
  kQ5_0,    // blocks of 32: f16 scale + 32 fifth bits + 4-bit values (offset 16)
  kQ5_1,    // blocks of 32: f16 scale + f16 min + 32 fifth bits + 4-bit values
  kIQ4_NL,  // blocks of 32: f16 scale + 4-bit indices into a 16-value non-linear table
  kIQ4_XS,  // super-blocks of 256: IQ4_NL's table with 6-bit scales per 32 elements
  kQ3_K,    // super-blocks of 256: 3-bit values, 6-bit scales per 16 (llama.cpp k-quants)
  kQ2_K,    // super-blocks of 256: 2-bit values, 4-bit scales and mins per 16
  // Read-only (no quantizer here: ggml's need an importance matrix and a grid-neighbour search).
  kIQ2_XXS,  // super-blocks of 256: 8-value grid entries (2.06 bits a weight), 4-bit scales per 32
  kIQ2_XS,   // super-blocks of 256: 512-entry grid (2.31 bits a weight), 4-bit scales per 16
  kIQ3_XXS,  // super-blocks of 256: 4-value grid entries (3.06 bits a weight), 4-bit scales per 32
  kIQ1_S,    // super-blocks of 256: 2048-entry grid of -1, 0, 1 plus a +-1/8 delta (1.56 bits a weight)
  kIQ3_S,    // super-blocks of 256: 512-entry grid of 4 values, sign bits (3.44 bits a weight)
  kIQ2_S,    // super-blocks of 256: 1024-entry grid, sign bits (2.56 bits a weight), 4-bit scales per 16
  kIQ1_M,    // super-blocks of 256: IQ1_S's grid, a delta sign per 8 and 3-bit scales per 16 (1.75 bits)
};

struct DTypeTraits {
  DType dtype;
  std::string_view name;     // lower-case, as users type it: "f32", "q8_0"
  uint32_t ggml_type;        // id in GGUF files
  int64_t block_elems;       // elements per block (1 for plain floats)
  int64_t block_bytes;       // bytes per block
  bool read_only = false;    // read from GGUF files, never written (no quantizer)
};

const DTypeTraits& dtype_traits(DType dtype);
std::string_view dtype_name(DType dtype);
std::optional<DType> dtype_from_name(std::string_view name);     // "q8_0", "F16", ...
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);        // nullopt: unsupported id
std::string_view ggml_type_name(uint32_t ggml_type);             // for error messages

// Bytes of a row of n_elems elements; n_elems must be a multiple of block_elems.
inline int64_t dtype_row_bytes(DType dtype, int64_t n_elems) {
  const DTypeTraits& t = dtype_traits(dtype);
  return n_elems / t.block_elems * t.block_bytes;
}
inline bool dtype_is_quantized(DType dtype) { return dtype_traits(dtype).block_elems > 1; }
// Whether quantize_row can write `dtype` (plimsoll convert --dtype): all but Q8_K's
// activations-side format and the read-only i-quants.
inline bool dtype_is_writable(DType dtype) { return dtype != DType::kQ8_K && !dtype_traits(dtype).read_only; }

}  // namespace plimsoll
