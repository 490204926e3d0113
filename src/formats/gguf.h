// GGUF reader: parses a GGUF v2/v3 file (from memory or a MappedFile) into
// typed metadata and validated tensor infos. Strict: hostile input is an Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "core/result.h"

namespace plimsoll {

// Metadata value types; the numbers are GGUF's and equal the variant indices below.
enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6,
  kBool = 7, kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
std::string_view gguf_type_name(GgufType type);  // "u32", "string", ...

// An array of one element type, stored as a typed vector (index = GgufType).
// Arrays of arrays nest through std::vector<GgufArray>.
struct GgufArray {
  using Items = std::variant<std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
                             std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
                             std::vector<float>, std::vector<bool>, std::vector<std::string>,
                             std::vector<GgufArray>, std::vector<uint64_t>,
                             std::vector<int64_t>, std::vector<double>>;
  Items items;

  GgufType elem_type() const { return static_cast<GgufType>(items.index()); }
  size_t size() const;
  bool operator==(const GgufArray& other) const { return items == other.items; }
};

// One metadata value; the variant index is its GgufType.
using GgufValue = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float,
                               bool, std::string, GgufArray, uint64_t, int64_t, double>;
inline GgufType gguf_type_of(const GgufValue& v) { return static_cast<GgufType>(v.index()); }

struct GgufKv {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  uint32_t ggml_type = 0;
  DType dtype = DType::kF32;
  std::vector<int64_t> ne;       // as stored: fastest-varying first
  std::vector<int64_t> shape;    // outermost first (reversed ne), as TensorView wants
  int64_t offset_bytes = 0;      // relative to the data section, as stored
  int64_t file_offset_bytes = 0; // absolute position in the file
  int64_t n_bytes = 0;
};

struct GgufFile {
  std::string name;               // file path or caller's label, used in errors
  uint32_t version = 3;
  int64_t alignment_bytes = 32;   // general.alignment, default 32
  int64_t data_offset_bytes = 0;  // start of the tensor data section
  std::vector<GgufKv> metadata;   // in file order
  std::vector<GgufTensorInfo> tensors;  // in file order

  const GgufValue* find(std::string_view key) const;
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Typed getters. Missing key: kNotFound; wrong type or out of range:
  // kInvalidFile naming the key. Integers accept any integer type.
  Result<int64_t> get_int(std::string_view key) const;
  Result<int64_t> get_int_or(std::string_view key, int64_t fallback) const;
  Result<double> get_float(std::string_view key) const;  // f32 or f64
  Result<double> get_float_or(std::string_view key, double fallback) const;
  Result<bool> get_bool_or(std::string_view key, bool fallback) const;
  Result<std::string> get_string(std::string_view key) const;
  Result<const GgufArray*> get_array(std::string_view key) const;

 private:
  Error key_error(std::string_view key, const std::string& problem) const;
};

// Limits (from the spec and ggml): tensors have 1..4 dims, names < 64 bytes.
constexpr uint32_t kGgufMaxDims = 4;
constexpr uint64_t kGgufMaxTensorNameBytes = 64;
constexpr uint64_t kGgufMaxKeyBytes = 65535;
constexpr int kGgufMaxArrayDepth = 8;
constexpr int64_t kGgufDefaultAlignmentBytes = 32;

// Parses and validates the whole header, and checks every tensor's data lies
// inside `bytes`, aligned. `name` is used in error messages.
Result<GgufFile> parse_gguf(std::span<const std::byte> bytes, const std::string& name);
Result<GgufFile> parse_gguf(const MappedFile& file);

// True when the bytes start with the GGUF magic.
bool has_gguf_magic(std::span<const std::byte> bytes);

// The bytes of one tensor inside the span the file was parsed from.
inline std::span<const std::byte> gguf_tensor_bytes(std::span<const std::byte> file_bytes,
                                                    const GgufTensorInfo& info) {
  return file_bytes.subspan(static_cast<size_t>(info.file_offset_bytes),
                            static_cast<size_t>(info.n_bytes));
}

}  // namespace plimsoll
