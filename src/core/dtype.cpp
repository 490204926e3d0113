// The dtype table: names, GGUF ids and block geometry.
#include "core/dtype.h"

#include <array>
#include <cctype>
#include <string>

namespace plimsoll {
namespace {

constexpr std::array<DTypeTraits, 23> kTraits = {{
    {DType::kF32, "f32", 0, 1, 4},
    {DType::kF16, "f16", 1, 1, 2},
    {DType::kBF16, "bf16", 30, 1, 2},
    {DType::kQ8_0, "q8_0", 8, 32, 34},
    {DType::kQ4_0, "q4_0", 2, 32, 18},
    {DType::kQ4_K, "q4_k", 12, 256, 144},
    {DType::kQ5_K, "q5_k", 13, 256, 176},
    {DType::kQ6_K, "q6_k", 14, 256, 210},
    {DType::kQ8_K, "q8_k", 15, 256, 292},
    {DType::kQ4_1, "q4_1", 3, 32, 20},
    {DType::kQ5_0, "q5_0", 6, 32, 22},
    {DType::kQ5_1, "q5_1", 7, 32, 24},
    {DType::kIQ4_NL, "iq4_nl", 20, 32, 18},
    {DType::kIQ4_XS, "iq4_xs", 23, 256, 136},
    {DType::kQ3_K, "q3_k", 11, 256, 110},
    {DType::kQ2_K, "q2_k", 10, 256, 84},
    {DType::kIQ2_XXS, "iq2_xxs", 16, 256, 66, true},
    {DType::kIQ2_XS, "iq2_xs", 17, 256, 74, true},
    {DType::kIQ3_XXS, "iq3_xxs", 18, 256, 98, true},
    {DType::kIQ1_S, "iq1_s", 19, 256, 50, true},
    {DType::kIQ3_S, "iq3_s", 21, 256, 110, true},
    {DType::kIQ2_S, "iq2_s", 22, 256, 82, true},
    {DType::kIQ1_M, "iq1_m", 29, 256, 56, true},
}};

}  // namespace

const DTypeTraits& dtype_traits(DType dtype) { return kTraits[static_cast<size_t>(dtype)]; }

std::string_view dtype_name(DType dtype) { return dtype_traits(dtype).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const DTypeTraits& t : kTraits) {
    if (t.name == lower) return t.dtype;
  }
  return std::nullopt;
}

std::optional<DType> dtype_from_ggml(uint32_t ggml_type) {
  for (const DTypeTraits& t : kTraits) {
    if (t.ggml_type == ggml_type) return t.dtype;
  }
  return std::nullopt;
}

std::string_view ggml_type_name(uint32_t ggml_type) {
  static constexpr std::array<std::string_view, 31> kNames = {
      "F32",  "F16",  "Q4_0", "Q4_1", "Q4_2(removed)", "Q4_3(removed)", "Q5_0", "Q5_1",
      "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS",
      "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64",
      "F64", "IQ1_M", "BF16"};
  if (ggml_type < kNames.size()) return kNames[ggml_type];
  return "unknown";
}

}  // namespace plimsoll
