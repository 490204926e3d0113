// GGUF export: metadata from ModelConfig/Vocab, then every tensor produced,
// converted and written one at a time (memory stays at one tensor).
#include "convert/gguf_export.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>

#include "formats/gguf_writer.h"
#include "kernels/kernels.h"

namespace plimsoll {
namespace {

// llama.cpp's llama_ftype for a file whose big tensors are all `dtype` (it reads
// general.file_type as is, so a wrong number mislabels the model in its logs and
// llama-bench's "type" column); k-quants take the *_M variant; none for q8_k.
std::optional<uint32_t> llama_file_type(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 0;    // LLAMA_FTYPE_ALL_F32
    case DType::kF16: return 1;    // MOSTLY_F16
    case DType::kQ4_0: return 2;   // MOSTLY_Q4_0
    case DType::kQ4_1: return 3;   // MOSTLY_Q4_1
    case DType::kQ5_0: return 8;   // MOSTLY_Q5_0
    case DType::kQ5_1: return 9;   // MOSTLY_Q5_1
    case DType::kIQ4_NL: return 25;  // MOSTLY_IQ4_NL
    case DType::kIQ4_XS: return 30;  // MOSTLY_IQ4_XS
    case DType::kQ8_0: return 7;   // MOSTLY_Q8_0
    case DType::kQ2_K: return 10;  // MOSTLY_Q2_K
    case DType::kQ3_K: return 12;  // MOSTLY_Q3_K_M
    case DType::kQ4_K: return 15;  // MOSTLY_Q4_K_M
    case DType::kQ5_K: return 17;  // MOSTLY_Q5_K_M
    case DType::kQ6_K: return 18;  // MOSTLY_Q6_K
    case DType::kBF16: return 32;  // MOSTLY_BF16
    default: return std::nullopt;  // llama.cpp guesses from the tensors
  }
}

Status set_metadata(GgufWriter& w, const ModelConfig& c, const Vocab& v, DType target) {
  // GGUF "llama" means interleaved RoPE pairs and no biases: other layouts would
  // need their q/k rows permuted (or other architectures' keys) to stay correct.
  if (c.arch != "llama" || c.rope_layout != RopeLayout::kInterleaved || c.qkv_bias || c.out_bias ||
      c.ffn_bias) {
    return make_error(ErrorCode::kUnsupported,
                      "GGUF export handles llama models with interleaved RoPE and no biases only; this is " +
                          c.arch + (c.rope_layout == RopeLayout::kHalfSplit ? " with half-split RoPE" : ""));
  }
  if (!c.rope_freq_factors.empty() || c.rope_freq_scale != 1.0f || c.qk_norm || c.head_dim_override) {
    return make_error(ErrorCode::kUnsupported,
                      "GGUF export does not write RoPE scaling, qk-norm or a head_dim other than dim / heads");
  }
  auto u32 = [](int64_t x) { return GgufValue(static_cast<uint32_t>(x)); };
  PLIMSOLL_TRY(w.set("general.architecture", std::string("llama")));
  PLIMSOLL_TRY(w.set("general.name", c.name.empty() ? std::string("plimsoll") : c.name));
  if (auto ftype = llama_file_type(target)) PLIMSOLL_TRY(w.set("general.file_type", u32(*ftype)));
  PLIMSOLL_TRY(w.set("llama.context_length", u32(c.max_seq_len)));
  PLIMSOLL_TRY(w.set("llama.embedding_length", u32(c.dim)));
  PLIMSOLL_TRY(w.set("llama.feed_forward_length", u32(c.ffn_dim)));
  PLIMSOLL_TRY(w.set("llama.block_count", u32(c.n_layers)));
  PLIMSOLL_TRY(w.set("llama.attention.head_count", u32(c.n_heads)));
  PLIMSOLL_TRY(w.set("llama.attention.head_count_kv", u32(c.n_kv_heads)));
  PLIMSOLL_TRY(w.set("llama.rope.dimension_count", u32(c.head_dim())));
  PLIMSOLL_TRY(w.set("llama.rope.freq_base", GgufValue(c.rope_theta)));
  PLIMSOLL_TRY(w.set("llama.attention.layer_norm_rms_epsilon", GgufValue(c.norm_eps)));
  PLIMSOLL_TRY(w.set("tokenizer.ggml.model", v.model));
  PLIMSOLL_TRY(w.set("tokenizer.ggml.tokens", GgufValue(GgufArray{v.pieces})));
  PLIMSOLL_TRY(w.set("tokenizer.ggml.scores", GgufValue(GgufArray{v.scores})));
  std::vector<int32_t> types;
  for (TokenType t : v.types) types.push_back(static_cast<int32_t>(t));
  PLIMSOLL_TRY(w.set("tokenizer.ggml.token_type", GgufValue(GgufArray{types})));
  // A byte-level vocabulary may have no BOS or unknown token (-1): no key then.
  if (v.bos_id >= 0) PLIMSOLL_TRY(w.set("tokenizer.ggml.bos_token_id", u32(v.bos_id)));
  if (v.eos_id >= 0) PLIMSOLL_TRY(w.set("tokenizer.ggml.eos_token_id", u32(v.eos_id)));
  if (v.unk_id >= 0) PLIMSOLL_TRY(w.set("tokenizer.ggml.unknown_token_id", u32(v.unk_id)));
  if (v.model != "gpt2" || v.add_bos_in_file) {  // else the reader's default for the pre-tokenizer
    PLIMSOLL_TRY(w.set("tokenizer.ggml.add_bos_token", GgufValue(v.add_bos)));
  }
  PLIMSOLL_TRY(w.set("tokenizer.ggml.add_eos_token", GgufValue(v.add_eos)));
  PLIMSOLL_TRY(w.set("tokenizer.ggml.add_space_prefix", GgufValue(v.add_space_prefix)));
  if (v.model == "gpt2") {  // byte-level BPE: its merges and pre-tokenizer travel too
    PLIMSOLL_TRY(w.set("tokenizer.ggml.merges", GgufValue(GgufArray{v.merges})));
    PLIMSOLL_TRY(w.set("tokenizer.ggml.pre", GgufValue(v.pre)));
  }
  return {};
}

}  // namespace

DType storage_dtype(DType target, const std::vector<int64_t>& shape) {
  if (shape.size() < 2) return DType::kF32;
  if (shape.back() % dtype_traits(target).block_elems != 0) {
    return target == DType::kF32 ? DType::kF32 : DType::kF16;
  }
  return target;
}

namespace {

// llama.cpp's use_more_bits (llama-quant.cpp).
bool use_more_bits(int64_t layer, int64_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

// N of "blk.N.<suffix>", or -1 when name is not that.
int64_t layer_of(const std::string& name, const std::string& suffix) {
  constexpr std::string_view kPrefix = "blk.";
  if (name.rfind(kPrefix, 0) != 0 || name.size() <= kPrefix.size() + suffix.size() + 1 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return -1;
  }
  const std::string n = name.substr(kPrefix.size(), name.size() - kPrefix.size() - suffix.size() - 1);
  if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(n);
}

}  // namespace

DType mix_dtype(QuantMix mix, DType target, const std::string& name, int64_t n_layers, bool has_output) {
  if (mix == QuantMix::kNone) return target;
  if (name == "output.weight" || (!has_output && name == "token_embd.weight")) return DType::kQ6_K;
  for (const char* suffix : {"attn_v.weight", "ffn_down.weight"}) {
    const int64_t layer = layer_of(name, suffix);
    if (layer >= 0 && use_more_bits(layer, n_layers)) return DType::kQ6_K;
  }
  return DType::kQ4_K;
}

std::vector<ExportTensor> llama_tensor_layout(const ModelConfig& c) {
  const int64_t dim = c.dim, kv = c.kv_dim(), ffn = c.ffn_dim;
  std::vector<ExportTensor> t;
  t.push_back({"token_embd.weight", {c.vocab_size, dim}, nullptr});
  t.push_back({"output_norm.weight", {dim}, nullptr});
  if (!c.tied_embeddings) t.push_back({"output.weight", {c.vocab_size, dim}, nullptr});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    t.push_back({p + "attn_norm.weight", {dim}, nullptr});
    t.push_back({p + "attn_q.weight", {dim, dim}, nullptr});
    t.push_back({p + "attn_k.weight", {kv, dim}, nullptr});
    t.push_back({p + "attn_v.weight", {kv, dim}, nullptr});
    t.push_back({p + "attn_output.weight", {dim, dim}, nullptr});
    t.push_back({p + "ffn_norm.weight", {dim}, nullptr});
    t.push_back({p + "ffn_gate.weight", {ffn, dim}, nullptr});
    t.push_back({p + "ffn_up.weight", {ffn, dim}, nullptr});
    t.push_back({p + "ffn_down.weight", {dim, ffn}, nullptr});
  }
  return t;
}

Result<ExportReport> export_llama_gguf(const std::string& path, const ModelConfig& config,
                                       const Vocab& vocab, std::vector<ExportTensor> tensors,
                                       DType target, QuantMix mix) {
  if (target == DType::kQ8_K) {
    return make_error(ErrorCode::kUnsupported, "q8_k is an activation format; pick another --dtype");
  }
  if (!dtype_is_writable(target)) {
    return make_error(ErrorCode::kUnsupported, std::string(dtype_name(target)) +
                                                   " is read-only (ggml's quantizer for it needs an importance matrix); "
                                                   "pick another --dtype");
  }
  GgufWriter writer;
  PLIMSOLL_TRY(set_metadata(writer, config, vocab, target));
  ExportReport report;
  const bool has_output =
      std::any_of(tensors.begin(), tensors.end(), [](const ExportTensor& t) { return t.name == "output.weight"; });
  for (ExportTensor& t : tensors) {
    const DType wanted = mix_dtype(mix, target, t.name, config.n_layers, has_output);
    const DType dtype = storage_dtype(wanted, t.shape);
    if (dtype != wanted && t.shape.size() >= 2) {
      report.fallbacks.push_back(t.name + ": " + std::to_string(t.shape.back()) +
                                 " columns, not a multiple of " +
                                 std::to_string(dtype_traits(wanted).block_elems) + ", stored " +
                                 std::string(dtype_name(dtype)));
    }
    const int64_t cols = t.shape.back();
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < t.shape.size(); ++i) rows *= t.shape[i];
    report.total_bytes += rows * dtype_row_bytes(dtype, cols);
    ++report.n_tensors;
    WeightSource source = std::move(t.source);
    auto producer = [source, dtype, rows, cols](std::span<std::byte> out) -> Status {
      std::vector<float> values(static_cast<size_t>(rows * cols));  // [rows, cols]
      PLIMSOLL_TRY(source(values));
      const int64_t row_bytes = dtype_row_bytes(dtype, cols);
      for (int64_t r = 0; r < rows; ++r) {
        kernels::quantize_row(dtype, values.data() + r * cols, out.data() + r * row_bytes, cols);
      }
      return {};
    };
    PLIMSOLL_TRY(writer.add_tensor(t.name, dtype, t.shape, producer));
  }
  PLIMSOLL_TRY(writer.write(path));
  return report;
}

}  // namespace plimsoll
