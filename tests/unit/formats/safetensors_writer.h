// Test helper: writes safetensors files (8-byte header length + JSON header +
// data) and Hugging Face folders, with hooks to corrupt the header.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/half.h"

namespace plimsoll::testing {

struct StTensor {
  std::string name;
  std::string dtype = "F32";        // F32, F16, BF16 (or anything, to test errors)
  std::vector<int64_t> shape;
  std::vector<float> values;         // stored in dtype
};

inline std::vector<std::byte> encode(const StTensor& t) {
  std::vector<std::byte> out;
  for (float v : t.values) {
    if (t.dtype == "F32") {
      const auto* p = reinterpret_cast<const std::byte*>(&v);
      out.insert(out.end(), p, p + 4);
    } else {
      const uint16_t h = t.dtype == "F16" ? f32_to_f16(v) : f32_to_bf16(v);
      const auto* p = reinterpret_cast<const std::byte*>(&h);
      out.insert(out.end(), p, p + 2);
    }
  }
  return out;
}

// The header a writer would produce for `tensors` (edit it to corrupt files).
inline nlohmann::json st_header(const std::vector<StTensor>& tensors) {
  nlohmann::json h = nlohmann::json::object();
  int64_t at = 0;
  for (const StTensor& t : tensors) {
    const int64_t n = static_cast<int64_t>(encode(t).size());
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {at, at + n}}};
    at += n;
  }
  return h;
}

inline std::vector<std::byte> st_bytes(const std::string& header_text, const std::vector<StTensor>& tensors,
                                       int64_t length_override = -1) {
  // resize + memcpy, not insert: GCC 12 -O3 sees a false -Warray-bounds in insert here.
  std::vector<std::byte> out(8 + header_text.size());
  const uint64_t n = length_override >= 0 ? static_cast<uint64_t>(length_override) : header_text.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<std::byte>((n >> (8 * i)) & 0xFF);
  if (!header_text.empty()) std::memcpy(out.data() + 8, header_text.data(), header_text.size());
  for (const StTensor& t : tensors) {
    const auto e = encode(t);
    const size_t at = out.size();
    out.resize(at + e.size());
    if (!e.empty()) std::memcpy(out.data() + at, e.data(), e.size());
  }
  return out;
}

inline std::vector<std::byte> st_bytes(const std::vector<StTensor>& tensors) {
  return st_bytes(st_header(tensors).dump(), tensors);
}

inline void write_bytes(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// Values 0, 1, 2, ... scaled: distinct per element so transposes are visible.
inline std::vector<float> iota(int64_t n, float scale = 0.01f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i) * scale;
  return v;
}

}  // namespace plimsoll::testing
