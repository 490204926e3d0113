// Writing a Llama model (config + vocabulary + weights) as GGUF, converting
// or quantizing each weight to the requested dtype on the way.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "formats/model_config.h"
#include "formats/vocab.h"

namespace plimsoll {

// Produces the f32 values of one weight tensor, [rows, cols] row-major, into out.
using WeightSource = std::function<Status(std::span<float> out)>;

struct ExportTensor {
  std::string name;             // GGUF name: token_embd.weight, blk.N.attn_q.weight, ...
  std::vector<int64_t> shape;   // outermost first
  WeightSource source;
};

struct ExportReport {
  int64_t n_tensors = 0;
  int64_t total_bytes = 0;
  std::vector<std::string> fallbacks;  // "ffn_down: 172 columns not a multiple of 32, kept f16"
};

// The dtype a tensor is stored in: 1-D tensors (norms) stay f32; a matrix
// whose row length is not a multiple of the target's block falls back to f16
// (f32 when the target is f32), as llama.cpp's quantizer does.
DType storage_dtype(DType target, const std::vector<int64_t>& shape);

// Writes path atomically. Metadata: general.*, llama.* from config, tokenizer.ggml.* from vocab.
Result<ExportReport> export_llama_gguf(const std::string& path, const ModelConfig& config,
                                       const Vocab& vocab, std::vector<ExportTensor> tensors,
                                       DType target);

// The tensor list of a Llama model of this config, in GGUF order, with no sources yet.
std::vector<ExportTensor> llama_tensor_layout(const ModelConfig& config);

}  // namespace plimsoll
