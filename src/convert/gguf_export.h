// Writing a Llama model (config + vocabulary + weights) as GGUF, converting
// or quantizing each weight to the requested dtype on the way.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "core/model_config.h"
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

// llama.cpp's mixed-dtype files (`--dtype q4_k_m`).
enum class QuantMix { kNone, kQ4_K_M };

// The dtype llama.cpp's llama_tensor_get_type picks for tensor `name` of an
// n_layers model under `mix` (before storage_dtype's block fallback). kNone:
// target. kQ4_K_M (target Q4_K): Q6_K for output.weight (token_embd.weight when
// there is no output.weight) and for attn_v / ffn_down of the layers its
// use_more_bits picks (the first eighth, the last eighth, every third between).
DType mix_dtype(QuantMix mix, DType target, const std::string& name, int64_t n_layers, bool has_output);

// Writes path atomically. Metadata: general.*, llama.* from config, tokenizer.ggml.* from vocab;
// general.file_type is llama.cpp's for target (Q4_K: 15, MOSTLY_Q4_K_M).
Result<ExportReport> export_llama_gguf(const std::string& path, const ModelConfig& config,
                                       const Vocab& vocab, std::vector<ExportTensor> tensors,
                                       DType target, QuantMix mix = QuantMix::kNone);

// The tensor list of a Llama model of this config, in GGUF order, with no sources yet.
std::vector<ExportTensor> llama_tensor_layout(const ModelConfig& config);

}  // namespace plimsoll
