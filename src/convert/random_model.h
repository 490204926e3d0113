// Random-weight Llama models of any real shape (for tests and benchmarks
// without downloads), and a synthetic SentencePiece-style vocabulary.
#pragma once

#include <cstdint>
#include <vector>

#include "convert/gguf_export.h"
#include "formats/model_file.h"

namespace plimsoll {

// A vocabulary of `size` entries: <unk>, <s>, </s>, the 256 byte tokens (the first
// kSyntheticSpecialPieces ids), then synthetic pieces ("▁a", "b", "▁ab", ...,
// every other printable ASCII character, "▁") with decreasing scores. size >= 259.
inline constexpr int64_t kSyntheticSpecialPieces = 3 + 256;
Vocab synthetic_vocab(int64_t size);

// Sources for every tensor of the config's layout: norms are 1, matrices are
// uniform in +-sqrt(3/cols) (unit variance outputs), deterministic in seed; an
// untied output head's rows of the special and byte tokens are 0.
std::vector<ExportTensor> random_llama_tensors(const ModelConfig& config, uint64_t seed);

// A random model held in memory (no file), weights stored in `dtype` with the
// same fallbacks as export: for tests of the engine against the reference.
Result<LoadedModel> random_llama_in_memory(const ModelConfig& config, DType dtype, uint64_t seed);

// Parameters (elements) of a Llama model of this config.
int64_t llama_parameter_count(const ModelConfig& config);

}  // namespace plimsoll
