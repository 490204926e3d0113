// Deterministic random weights (splitmix64 per tensor) and synthetic vocabularies.
#include "convert/random_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "kernels/kernels.h"

namespace plimsoll {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

Vocab synthetic_vocab(int64_t size) {
  Vocab v;
  v.model = "llama";
  auto add = [&](std::string piece, float score, TokenType type) {
    v.pieces.push_back(std::move(piece));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0.0f, TokenType::kUnknown);
  add("<s>", 0.0f, TokenType::kControl);
  add("</s>", 0.0f, TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    add(buf, 0.0f, TokenType::kByte);
  }
  // Lower-case letters and pairs, with and without the space marker.
  const std::string space = "\xe2\x96\x81";  // U+2581
  const std::string letters = "etaoinshrdlcumwfgypbvkjxqz";
  std::vector<std::string> pieces;
  for (char a : letters) pieces.push_back(std::string(1, a));
  for (char a : letters) pieces.push_back(space + a);
  for (char a : letters) {
    for (char b : letters) pieces.push_back(std::string(1, a) + b);
  }
  for (char a : letters) {
    for (char b : letters) pieces.push_back(space + a + b);
  }
  // Then every other printable ASCII character, and the space marker alone, as a real
  // SentencePiece vocabulary holds every character its pieces are made of: text
  // then tokenizes the same under byte fallback (Hugging Face, llama2.c) and under
  // llama.cpp's merge of unknown characters into their neighbours.
  pieces.push_back(space);
  for (char c = '!'; c <= '~'; ++c) {
    if (letters.find(c) == std::string::npos) pieces.push_back(std::string(1, c));
  }
  for (size_t i = 0; i < pieces.size() && v.size() < size; ++i) {
    add(pieces[i], -static_cast<float>(i), TokenType::kNormal);
  }
  for (int64_t i = 0; v.size() < size; ++i) {  // filler pieces, never produced by merges of text
    add("<extra_" + std::to_string(i) + ">", -1e9f, TokenType::kUserDefined);
  }
  return v;
}

std::vector<ExportTensor> random_llama_tensors(const ModelConfig& config, uint64_t seed) {
  std::vector<ExportTensor> tensors = llama_tensor_layout(config);
  for (ExportTensor& t : tensors) {
    const bool is_norm = t.shape.size() == 1;
    const int64_t cols = t.shape.back();
    const uint64_t tensor_seed = seed ^ hash_name(t.name);
    // An untied output head scores the special and byte tokens 0: the others' random
    // logits always include a larger one, so greedy output is whole pieces, as a real
    // model's mostly is (a lone byte token is a partial UTF-8 character).
    const int64_t zero_rows =
        t.name == "output.weight" ? std::min<int64_t>(kSyntheticSpecialPieces, t.shape.front()) : 0;
    t.source = [is_norm, cols, tensor_seed, zero_rows](std::span<float> out) -> Status {
      if (is_norm) {
        for (float& x : out) x = 1.0f;
        return {};
      }
      const float scale = std::sqrt(3.0f / static_cast<float>(cols));
      uint64_t state = tensor_seed;
      for (float& x : out) {
        const double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;  // [0, 1)
        x = static_cast<float>((2.0 * u - 1.0) * scale);
      }
      std::fill(out.begin(), out.begin() + std::min<int64_t>(zero_rows * cols, static_cast<int64_t>(out.size())), 0.0f);
      return {};
    };
  }
  return tensors;
}

Result<LoadedModel> random_llama_in_memory(const ModelConfig& config, DType dtype, uint64_t seed) {
  if (!dtype_is_writable(dtype)) {
    return make_error(ErrorCode::kUnsupported, std::string(dtype_name(dtype)) + " has no quantizer (read-only)");
  }
  LoadedModel model;
  model.path = "<random in memory>";
  model.config = config;
  model.vocab = synthetic_vocab(config.vocab_size);
  for (ExportTensor& t : random_llama_tensors(config, seed)) {
    const DType stored = storage_dtype(dtype, t.shape);
    const int64_t cols = t.shape.back();
    const int64_t rows = t.shape.size() > 1 ? t.shape[0] : 1;
    std::vector<float> values(static_cast<size_t>(rows * cols));
    PLIMSOLL_TRY(t.source(values));
    const int64_t row_bytes = dtype_row_bytes(stored, cols);
    std::vector<std::byte> bytes(static_cast<size_t>(rows * row_bytes));
    for (int64_t r = 0; r < rows; ++r) {
      kernels::quantize_row(stored, values.data() + r * cols, bytes.data() + r * row_bytes, cols);
    }
    TensorView view;
    view.name = t.name;
    view.dtype = stored;
    view.shape = t.shape;
    view.n_bytes = static_cast<int64_t>(bytes.size());
    view.data = model.tensors.adopt(std::move(bytes));
    PLIMSOLL_TRY(model.tensors.add(std::move(view)));
  }
  return model;
}

int64_t llama_parameter_count(const ModelConfig& c) {
  int64_t n = c.vocab_size * c.dim * (c.tied_embeddings ? 1 : 2) + c.dim;
  n += c.n_layers * (2 * c.dim + 2 * c.dim * c.dim + 2 * c.kv_dim() * c.dim + 3 * c.ffn_dim * c.dim);
  return n;
}

}  // namespace plimsoll
