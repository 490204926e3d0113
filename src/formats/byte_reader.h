// ByteReader: bounds-checked little-endian reads from a byte span, used by the
// file-format parsers; every failure is an Error naming the file and offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "core/result.h"

namespace plimsoll {

// a * b and a + b for sizes; false on overflow of int64_t or a negative operand.
inline bool checked_mul(int64_t a, int64_t b, int64_t* out) {
  return a >= 0 && b >= 0 && !__builtin_mul_overflow(a, b, out);
}
inline bool checked_add(int64_t a, int64_t b, int64_t* out) {
  return a >= 0 && b >= 0 && !__builtin_add_overflow(a, b, out);
}

class ByteReader {
 public:
  ByteReader(std::span<const std::byte> bytes, std::string name)
      : bytes_(bytes), name_(std::move(name)) {}

  int64_t offset_bytes() const { return static_cast<int64_t>(pos_); }
  int64_t remaining_bytes() const { return static_cast<int64_t>(bytes_.size() - pos_); }
  const std::string& name() const { return name_; }

  // "<name>: <message>".
  Error error(ErrorCode code, const std::string& message) const {
    return make_error(code, name_ + ": " + message);
  }

  // Fails unless n_bytes more bytes are left; `what` names the field.
  Status need(uint64_t n_bytes, std::string_view what) const {
    if (n_bytes > static_cast<uint64_t>(remaining_bytes())) {
      return error(ErrorCode::kInvalidFile,
                   "truncated: " + std::string(what) + " at byte " + std::to_string(pos_) +
                       " needs " + std::to_string(n_bytes) + " bytes, " +
                       std::to_string(remaining_bytes()) + " left");
    }
    return {};
  }

  template <typename T>
  Result<T> read(std::string_view what) {
    PLIMSOLL_TRY(need(sizeof(T), what));
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  Result<uint32_t> read_u32(std::string_view what) { return read<uint32_t>(what); }
  Result<uint64_t> read_u64(std::string_view what) { return read<uint64_t>(what); }
  Result<int32_t> read_i32(std::string_view what) { return read<int32_t>(what); }

  // n_bytes raw bytes (a view into the span).
  Result<std::span<const std::byte>> read_bytes(uint64_t n_bytes, std::string_view what) {
    PLIMSOLL_TRY(need(n_bytes, what));
    std::span<const std::byte> out = bytes_.subspan(pos_, static_cast<size_t>(n_bytes));
    pos_ += static_cast<size_t>(n_bytes);
    return out;
  }

  // A GGUF string: u64 length, then that many bytes; longer than max_len fails.
  Result<std::string> read_string(std::string_view what, uint64_t max_len) {
    PLIMSOLL_ASSIGN(const uint64_t len, read_u64(what));
    if (len > max_len) {
      return error(ErrorCode::kInvalidFile, std::string(what) + " at byte " +
                                                std::to_string(pos_ - 8) + " has length " +
                                                std::to_string(len) + ", more than " +
                                                std::to_string(max_len));
    }
    PLIMSOLL_ASSIGN(auto raw, read_bytes(len, what));
    return std::string(reinterpret_cast<const char*>(raw.data()), raw.size());
  }

  Status skip(uint64_t n_bytes, std::string_view what) {
    PLIMSOLL_TRY(need(n_bytes, what));
    pos_ += static_cast<size_t>(n_bytes);
    return {};
  }

 private:
  std::span<const std::byte> bytes_;
  std::string name_;
  size_t pos_ = 0;
};

}  // namespace plimsoll
