// libFuzzer target: parses arbitrary bytes as GGUF (and as a llama2.c
// checkpoint) and builds a LoadedModel; every accepted view must lie inside the input.
#include <cstddef>
#include <cstdint>
#include <span>

#include "formats/gguf.h"
#include "formats/model_file.h"

namespace {

using plimsoll::TensorView;

// Traps unless [data, data + n_bytes) lies inside the input, and reads its ends
// so AddressSanitizer checks them too.
void check_inside(std::span<const std::byte> input, const std::byte* data, int64_t n_bytes) {
  const std::byte* lo = input.data();
  const std::byte* hi = input.data() + input.size();
  if (n_bytes <= 0 || data < lo || data > hi || n_bytes > hi - data) __builtin_trap();
  volatile std::byte first = data[0];
  volatile std::byte last = data[n_bytes - 1];
  (void)first;
  (void)last;
}

void check_model(std::span<const std::byte> input, const plimsoll::LoadedModel& m) {
  for (const TensorView& t : m.tensors.tensors()) {
    check_inside(input, t.data, t.n_bytes);
    if (t.n_bytes != t.rows() * t.row_bytes()) __builtin_trap();
  }
  if (m.config.dim <= 0 || m.config.n_layers <= 0 || m.config.head_dim() <= 0) __builtin_trap();
  if (m.vocab && m.vocab->size() != m.config.vocab_size) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> input(reinterpret_cast<const std::byte*>(data), size);
  auto gguf = plimsoll::parse_gguf(input, "fuzz.gguf");
  if (gguf.ok()) {
    for (const plimsoll::GgufTensorInfo& t : gguf->tensors) {
      check_inside(input, input.data() + t.file_offset_bytes, t.n_bytes);
    }
    auto model = plimsoll::model_from_gguf(*gguf, input);
    if (model.ok()) check_model(input, *model);
  }
  // Also the llama2.c path (parse_model picks it when the magic is not GGUF).
  auto any = plimsoll::parse_model(input, "fuzz.bin");
  if (any.ok()) check_model(input, *any);
  return 0;
}
