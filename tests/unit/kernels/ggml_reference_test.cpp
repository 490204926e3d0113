// Our codecs against bytes and floats recorded from ggml's own reference
// quantizers and dequantizers (ggml_reference_data.h): layouts must agree exactly.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ggml_reference_data.h"
#include "kernels/kernels.h"

namespace plimsoll::kernels {
namespace {

std::vector<uint8_t> from_hex(const char* hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; hex[i] != 0 && hex[i + 1] != 0; i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(std::string(hex + i, 2), nullptr, 16)));
  }
  return out;
}

struct RefCase {
  DType dtype;
  int n;
  const char* hex;
  const uint32_t* float_bits;
};

const RefCase kCases[] = {
    {DType::kQ8_0, 64, ggml_ref::kQ8_0Bytes, ggml_ref::kQ8_0Floats},
    {DType::kQ4_0, 64, ggml_ref::kQ4_0Bytes, ggml_ref::kQ4_0Floats},
    {DType::kQ4_K, 256, ggml_ref::kQ4_KBytes, ggml_ref::kQ4_KFloats},
    {DType::kQ5_K, 256, ggml_ref::kQ5_KBytes, ggml_ref::kQ5_KFloats},
    {DType::kQ6_K, 256, ggml_ref::kQ6_KBytes, ggml_ref::kQ6_KFloats},
    {DType::kQ8_K, 256, ggml_ref::kQ8_KBytes, ggml_ref::kQ8_KFloats},
};

TEST(GgmlReference, DequantizeMatchesGgmlBitForBit) {
  for (const RefCase& c : kCases) {
    const std::vector<uint8_t> bytes = from_hex(c.hex);
    ASSERT_EQ(static_cast<int64_t>(bytes.size()), dtype_row_bytes(c.dtype, c.n)) << dtype_name(c.dtype);
    std::vector<float> y(static_cast<size_t>(c.n));
    dequantize_row(c.dtype, bytes.data(), y.data(), c.n);
    for (int i = 0; i < c.n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &y[static_cast<size_t>(i)], 4);
      ASSERT_EQ(bits, c.float_bits[i]) << dtype_name(c.dtype) << " element " << i;
    }
  }
}

TEST(GgmlReference, QuantizeMatchesGgmlBytes) {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[static_cast<size_t>(i)] = ggml_ref::ggml_ref_input(i);
  for (const RefCase& c : kCases) {
    const std::vector<uint8_t> want = from_hex(c.hex);
    std::vector<uint8_t> got(want.size());
    quantize_row(c.dtype, x.data(), got.data(), c.n);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(int(got[i]), int(want[i])) << dtype_name(c.dtype) << " byte " << i;
    }
  }
}

}  // namespace
}  // namespace plimsoll::kernels
