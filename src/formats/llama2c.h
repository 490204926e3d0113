// llama2.c checkpoints (stories*.bin): header validation and tensor views
// under GGUF names. The format is described in models/stories260K/README.md.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "core/result.h"
#include "formats/model_file.h"

namespace plimsoll {

constexpr int64_t kLlama2cHeaderBytes = 7 * 4;

// Views point into `bytes` (F32), which must outlive the model; `path` is
// used as LoadedModel::path and in errors. Vocab is not part of the file.
Result<LoadedModel> parse_llama2c_model(std::span<const std::byte> bytes, const std::string& path);

}  // namespace plimsoll
