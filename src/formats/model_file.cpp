// load_model / load_vocab: format detection (a folder is a Hugging Face model),
// GGUF -> ModelConfig (through formats/architecture.h), Vocab and tensor
// views, and the tensor-set validation shared by all formats.
#include "formats/model_file.h"

#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/mapped_file.h"
#include "formats/architecture.h"
#include "formats/hf_model.h"
#include "formats/llama2c.h"
#include "formats/llama2c_vocab.h"

namespace plimsoll {
namespace {

constexpr int64_t kMaxWidth = int64_t{1} << 24;   // dim, ffn, context: generous bounds
constexpr int64_t kMaxLayers = 4096;
constexpr uint32_t kNoToken = 0xFFFFFFFFu;

std::string file_stem(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

Error invalid(const std::string& path, const std::string& problem) {
  return make_error(ErrorCode::kInvalidFile, path + ": " + problem);
}

// A required integer key in [1, max].
Result<int64_t> positive_key(const GgufFile& g, const std::string& key, int64_t max) {
  PLIMSOLL_ASSIGN(const int64_t v, g.get_int(key));
  if (v < 1 || v > max) {
    return invalid(g.name, "key '" + key + "' is " + std::to_string(v) + ", must be 1 to " +
                               std::to_string(max));
  }
  return v;
}

Status check_head_geometry(const ModelConfig& c, const std::string& path) {
  if (!c.head_dim_override && (c.n_heads > c.dim || c.dim % c.n_heads != 0)) {
    return invalid(path, "dim " + std::to_string(c.dim) + " is not a multiple of n_heads " +
                             std::to_string(c.n_heads));
  }
  if (c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0) {
    return invalid(path, "n_heads " + std::to_string(c.n_heads) +
                             " is not a multiple of n_kv_heads " + std::to_string(c.n_kv_heads));
  }
  if (c.positions == PositionKind::kRope && c.head_dim() % 2 != 0) {
    return invalid(path, "head dimension " + std::to_string(c.head_dim()) +
                             " is odd; rotary embeddings need it even");
  }
  return {};
}

// The RoPE keys: rope.freq_base, rope.dimension_count (must be the head
// width), rope.scaling.type ("linear" or none) and rope.scaling.factor.
Status rope_config_from_gguf(const GgufFile& g, const std::string& k, ModelConfig& c) {
  PLIMSOLL_ASSIGN(const double theta, g.get_float_or(k + "rope.freq_base", 10000.0));
  if (!(theta > 0.0 && theta < 1e12)) return invalid(g.name, "rope.freq_base must be positive");
  c.rope_theta = static_cast<float>(theta);
  if (g.find(k + "rope.dimension_count")) {
    PLIMSOLL_ASSIGN(const int64_t n_rot, g.get_int(k + "rope.dimension_count"));
    if (n_rot != c.head_dim()) {
      return make_error(ErrorCode::kUnsupported, g.name + ": key '" + k + "rope.dimension_count' is " +
                                                     std::to_string(n_rot) + "; only the full head width " +
                                                     std::to_string(c.head_dim()) + " is supported");
    }
  }
  std::string type = "none";
  if (g.find(k + "rope.scaling.type")) {
    PLIMSOLL_ASSIGN(type, g.get_string(k + "rope.scaling.type"));
  }
  if (type == "linear") {
    PLIMSOLL_ASSIGN(const double factor, g.get_float(k + "rope.scaling.factor"));
    if (!(factor >= 1.0 && factor < 1e6)) return invalid(g.name, "rope.scaling.factor must be in [1, 1e6)");
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
  } else if (type != "none") {
    return make_error(ErrorCode::kUnsupported, g.name + ": key '" + k + "rope.scaling.type' is '" + type +
                                                   "'; supported are linear, none");
  }
  return {};
}

// rope_freqs.weight (Llama 3's frequency divisors, [head_dim / 2] f32) into the config.
Status rope_freqs_from_gguf(const GgufFile& g, std::span<const std::byte> bytes, ModelConfig& c) {
  const GgufTensorInfo* t = g.find_tensor("rope_freqs.weight");
  if (!t) return {};
  const int64_t half = c.head_dim() / 2;
  if (t->dtype != DType::kF32 || t->shape != std::vector<int64_t>{half}) {
    return invalid(g.name, "tensor 'rope_freqs.weight' must be f32 [" + std::to_string(half) + "], is " +
                               std::string(dtype_name(t->dtype)) + " " + shape_to_string(t->shape));
  }
  c.rope_freq_factors.resize(static_cast<size_t>(half));
  std::memcpy(c.rope_freq_factors.data(), bytes.data() + t->file_offset_bytes, static_cast<size_t>(half) * 4);
  for (float f : c.rope_freq_factors) {
    if (!(f > 0.0f && f < 1e6f)) return invalid(g.name, "tensor 'rope_freqs.weight' holds a factor outside (0, 1e6)");
  }
  return {};
}

// Keys "<arch>.*": sizes and heads, the norm epsilon, RoPE; switches from the description.
Result<ModelConfig> config_from_gguf(const GgufFile& g, const Architecture& a) {
  ModelConfig c = a.switches;
  c.name = file_stem(g.name);
  if (g.find("general.name")) {
    PLIMSOLL_ASSIGN(c.name, g.get_string("general.name"));
  }
  const std::string k = std::string(a.gguf_name) + ".";
  PLIMSOLL_ASSIGN(c.max_seq_len, positive_key(g, k + "context_length", kMaxWidth));
  PLIMSOLL_ASSIGN(c.dim, positive_key(g, k + "embedding_length", kMaxWidth));
  PLIMSOLL_ASSIGN(c.ffn_dim, positive_key(g, k + "feed_forward_length", kMaxWidth));
  PLIMSOLL_ASSIGN(c.n_layers, positive_key(g, k + "block_count", kMaxLayers));
  PLIMSOLL_ASSIGN(c.n_heads, positive_key(g, k + "attention.head_count", kMaxWidth));
  c.n_kv_heads = c.n_heads;
  if (g.find(k + "attention.head_count_kv")) {
    PLIMSOLL_ASSIGN(c.n_kv_heads, positive_key(g, k + "attention.head_count_kv", kMaxWidth));
  }
  if (g.find(k + "attention.key_length")) {
    PLIMSOLL_ASSIGN(const int64_t hd, positive_key(g, k + "attention.key_length", kMaxWidth));
    if (hd * c.n_heads != c.dim) c.head_dim_override = hd;
  }
  const std::string eps_key = k + a.gguf_eps_key;
  PLIMSOLL_ASSIGN(const double eps, g.get_float(eps_key));
  if (!(eps > 0.0 && eps < 1.0)) return invalid(g.name, "key '" + eps_key + "' must be in (0, 1)");
  c.norm_eps = static_cast<float>(eps);
  if (c.positions == PositionKind::kRope) {
    c.rope_layout = a.gguf_rope;
    PLIMSOLL_TRY(rope_config_from_gguf(g, k, c));
  }
  if (a.gguf_fields) PLIMSOLL_TRY(a.gguf_fields(g, c));
  PLIMSOLL_TRY(check_head_geometry(c, g.name));
  return c;
}

template <typename T>
Result<const std::vector<T>*> typed_array(const GgufFile& g, const std::string& key,
                                          GgufType want) {
  PLIMSOLL_ASSIGN(const GgufArray* a, g.get_array(key));
  if (const auto* v = std::get_if<std::vector<T>>(&a->items)) return v;
  return invalid(g.name, "key '" + key + "' is an array of " +
                             std::string(gguf_type_name(a->elem_type())) + ", expected " +
                             std::string(gguf_type_name(want)));
}

// A special token id: -1 for none (absent default out of range, or 0xFFFFFFFF / -1).
Result<int32_t> token_id(const GgufFile& g, const std::string& key, int32_t fallback,
                         int64_t n_tokens) {
  if (!g.find(key)) return fallback < n_tokens ? fallback : -1;
  PLIMSOLL_ASSIGN(const int64_t id, g.get_int(key));
  if (id == -1 || id == kNoToken) return -1;
  if (id < 0 || id >= n_tokens) {
    return invalid(g.name, "key '" + key + "' is " + std::to_string(id) +
                               ", outside the vocabulary of " + std::to_string(n_tokens));
  }
  return static_cast<int32_t>(id);
}

Status fill_vocab_arrays(const GgufFile& g, Vocab& v) {
  PLIMSOLL_ASSIGN(const auto* tokens,
                  typed_array<std::string>(g, "tokenizer.ggml.tokens", GgufType::kString));
  if (tokens->empty() || tokens->size() > static_cast<size_t>(INT32_MAX)) {
    return invalid(g.name, "tokenizer.ggml.tokens has " + std::to_string(tokens->size()) +
                               " entries");
  }
  v.pieces = *tokens;
  const size_t n = tokens->size();
  v.scores.assign(n, 0.0f);
  v.types.assign(n, TokenType::kNormal);
  if (g.find("tokenizer.ggml.scores")) {
    PLIMSOLL_ASSIGN(const auto* scores,
                    typed_array<float>(g, "tokenizer.ggml.scores", GgufType::kF32));
    if (scores->size() != n) {
      return invalid(g.name, "tokenizer.ggml.scores has " + std::to_string(scores->size()) +
                                 " entries, tokens " + std::to_string(n));
    }
    v.scores = *scores;
  }
  if (g.find("tokenizer.ggml.token_type")) {
    PLIMSOLL_ASSIGN(const auto* types,
                    typed_array<int32_t>(g, "tokenizer.ggml.token_type", GgufType::kI32));
    if (types->size() != n) {
      return invalid(g.name, "tokenizer.ggml.token_type has " + std::to_string(types->size()) +
                                 " entries, tokens " + std::to_string(n));
    }
    for (size_t i = 0; i < n; ++i) {
      const int32_t t = (*types)[i];
      if (t < 0 || t > static_cast<int32_t>(TokenType::kByte)) {
        return invalid(g.name, "token " + std::to_string(i) + " has unknown type " +
                                   std::to_string(t));
      }
      v.types[i] = static_cast<TokenType>(t);
    }
  }
  return {};
}

// Defaults as llama.cpp's: a SentencePiece vocabulary has <unk> <s> </s> at
// 0 1 2 and adds BOS; a byte-level one has no fixed ids, and whether it adds
// BOS without the key depends on its pre-tokenizer (tokenizer/ decides).
// WordPiece ("bert"): [CLS] 101 first, [SEP] 102 last, [UNK] 100, as llama.cpp's
// defaults; bos/eos keys win over cls/sep ("seperator" is the key's spelling).
Status fill_bert_specials(const GgufFile& g, Vocab& v) {
  const int64_t n = v.size();
  PLIMSOLL_ASSIGN(const int32_t cls, token_id(g, "tokenizer.ggml.cls_token_id", 101, n));
  PLIMSOLL_ASSIGN(const int32_t sep, token_id(g, "tokenizer.ggml.seperator_token_id", 102, n));
  PLIMSOLL_ASSIGN(v.bos_id, token_id(g, "tokenizer.ggml.bos_token_id", cls, n));
  PLIMSOLL_ASSIGN(v.eos_id, token_id(g, "tokenizer.ggml.eos_token_id", sep, n));
  PLIMSOLL_ASSIGN(v.unk_id, token_id(g, "tokenizer.ggml.unknown_token_id", 100, n));
  PLIMSOLL_ASSIGN(v.pad_id, token_id(g, "tokenizer.ggml.padding_token_id", 0, n));
  v.add_bos_in_file = g.find("tokenizer.ggml.add_bos_token") != nullptr;
  PLIMSOLL_ASSIGN(v.add_bos, g.get_bool_or("tokenizer.ggml.add_bos_token", true));
  PLIMSOLL_ASSIGN(v.add_eos, g.get_bool_or("tokenizer.ggml.add_sep_token", true));
  v.add_space_prefix = false;
  return {};
}

Status fill_vocab_specials(const GgufFile& g, Vocab& v) {
  if (v.model == "bert") return fill_bert_specials(g, v);
  const int64_t n = v.size();
  const bool spm = v.model == "llama";
  PLIMSOLL_ASSIGN(v.bos_id, token_id(g, "tokenizer.ggml.bos_token_id", spm ? 1 : -1, n));
  PLIMSOLL_ASSIGN(v.eos_id, token_id(g, "tokenizer.ggml.eos_token_id", spm ? 2 : -1, n));
  PLIMSOLL_ASSIGN(v.unk_id, token_id(g, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1, n));
  PLIMSOLL_ASSIGN(v.pad_id, token_id(g, "tokenizer.ggml.padding_token_id", -1, n));
  v.add_bos_in_file = g.find("tokenizer.ggml.add_bos_token") != nullptr;
  PLIMSOLL_ASSIGN(v.add_bos, g.get_bool_or("tokenizer.ggml.add_bos_token", spm));
  PLIMSOLL_ASSIGN(v.add_eos, g.get_bool_or("tokenizer.ggml.add_eos_token", false));
  PLIMSOLL_ASSIGN(v.add_space_prefix, g.get_bool_or("tokenizer.ggml.add_space_prefix", spm));
  return {};
}

// tokenizer.ggml.merges (required) and tokenizer.ggml.pre of a "gpt2" vocabulary.
Status fill_bpe_vocab(const GgufFile& g, Vocab& v) {
  if (!g.find("tokenizer.ggml.merges")) {
    return invalid(g.name, "tokenizer.ggml.model is 'gpt2' but key 'tokenizer.ggml.merges' is missing");
  }
  PLIMSOLL_ASSIGN(const auto* merges,
                  typed_array<std::string>(g, "tokenizer.ggml.merges", GgufType::kString));
  v.merges = *merges;
  v.pre = "default";
  if (g.find("tokenizer.ggml.pre")) {
    PLIMSOLL_ASSIGN(v.pre, g.get_string("tokenizer.ggml.pre"));
  }
  return {};
}

Status add_gguf_tensors(const GgufFile& g, std::span<const std::byte> bytes, TensorStore& store) {
  for (const GgufTensorInfo& t : g.tensors) {
    TensorView view{t.name, t.dtype, t.shape, bytes.data() + t.file_offset_bytes, t.n_bytes};
    Status s = store.add(std::move(view));
    if (!s.ok()) return s.error().with_context(g.name);
  }
  return {};
}

Result<int64_t> vocab_size_of(const GgufFile& g, const std::optional<Vocab>& vocab) {
  if (vocab) return vocab->size();
  const GgufTensorInfo* embd = g.find_tensor("token_embd.weight");
  if (!embd) return invalid(g.name, "missing tensor 'token_embd.weight'");
  return embd->shape.front();
}

Result<std::shared_ptr<MappedFile>> open_file(const std::string& path, FileBacking backing = FileBacking::kMapped) {
  return MappedFile::open(path, backing);
}

std::span<const std::byte> bytes_of(const MappedFile& f) {
  return {f.data(), static_cast<size_t>(f.size_bytes())};
}

}  // namespace

Result<std::optional<Vocab>> vocab_from_gguf(const GgufFile& g) {
  const bool has_model = g.find("tokenizer.ggml.model") != nullptr;
  if (!has_model && !g.find("tokenizer.ggml.tokens")) return std::optional<Vocab>();
  Vocab v;
  if (has_model) {
    PLIMSOLL_ASSIGN(v.model, g.get_string("tokenizer.ggml.model"));
  }
  if (v.model != "llama" && v.model != "gpt2" && v.model != "bert") {
    return make_error(ErrorCode::kUnsupported, g.name + ": tokenizer.ggml.model '" + v.model +
                                                   "' is not supported (llama, gpt2, bert)");
  }
  PLIMSOLL_TRY(fill_vocab_arrays(g, v));
  PLIMSOLL_TRY(fill_vocab_specials(g, v));
  if (v.model == "gpt2") PLIMSOLL_TRY(fill_bpe_vocab(g, v));
  return std::optional<Vocab>(std::move(v));
}

Status validate_decoder_tensors(const ModelConfig& c, const TensorStore& tensors,
                                const std::string& path) {
  const Architecture* a = architecture_named(c.arch);
  if (!a) {
    return make_error(ErrorCode::kUnsupported, path + ": architecture '" + c.arch + "' is not supported");
  }
  for (const ExpectedTensor& e : expected_tensors(*a, c, tensors)) {
    const TensorView* t = tensors.find(e.name);
    if (!t) return invalid(path, "missing tensor '" + e.name + "'");
    if (t->shape != e.shape) {
      return invalid(path, "tensor '" + e.name + "' has shape " + shape_to_string(t->shape) +
                               ", expected " + shape_to_string(e.shape));
    }
    if (e.f32 && t->dtype != DType::kF32) {
      return invalid(path, "tensor '" + e.name + "' has type " +
                               std::string(dtype_name(t->dtype)) + ", norms must be f32 (biases too)");
    }
    if (t->dtype == DType::kQ8_K) {
      return make_error(ErrorCode::kUnsupported,
                        path + ": tensor '" + e.name + "' has type q8_k, not supported for weights");
    }
  }
  return {};
}

Result<LoadedModel> model_from_gguf(const GgufFile& g, std::span<const std::byte> bytes) {
  PLIMSOLL_ASSIGN(const std::string arch, g.get_string("general.architecture"));
  const Architecture* a = architecture_for_gguf(arch);
  if (!a) {
    return make_error(ErrorCode::kUnsupported, g.name + ": architecture '" + arch +
                                                   "' is not supported (" + gguf_architecture_names() + ")");
  }
  LoadedModel m;
  m.format = ModelFormat::kGguf;
  m.path = g.name;
  PLIMSOLL_ASSIGN(m.config, config_from_gguf(g, *a));
  PLIMSOLL_TRY(rope_freqs_from_gguf(g, bytes, m.config));
  PLIMSOLL_ASSIGN(m.vocab, vocab_from_gguf(g));
  PLIMSOLL_ASSIGN(m.config.vocab_size, vocab_size_of(g, m.vocab));
  if (g.find("tokenizer.chat_template")) {
    TokenizerSettings settings;
    PLIMSOLL_ASSIGN(settings.chat_template, g.get_string("tokenizer.chat_template"));
    m.tokenizer_settings = std::move(settings);
  }
  m.config.tied_embeddings = g.find_tensor("output.weight") == nullptr;
  PLIMSOLL_TRY(add_gguf_tensors(g, bytes, m.tensors));
  PLIMSOLL_TRY(validate_decoder_tensors(m.config, m.tensors, g.name));
  return m;
}

Result<LoadedModel> parse_model(std::span<const std::byte> bytes, const std::string& name) {
  if (has_gguf_magic(bytes)) {
    PLIMSOLL_ASSIGN(const GgufFile g, parse_gguf(bytes, name));
    return model_from_gguf(g, bytes);
  }
  return parse_llama2c_model(bytes, name);
}

Result<LoadedModel> load_model(const std::string& path, FileBacking backing) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return load_hf_model(path);
  PLIMSOLL_ASSIGN(std::shared_ptr<MappedFile> file, open_file(path, backing));
  PLIMSOLL_ASSIGN(LoadedModel m, parse_model(bytes_of(*file), path));
  m.tensors.keep_alive(std::move(file));
  return m;
}

Result<Vocab> load_vocab(const std::string& path) { return load_vocab(path, -1); }

Result<Vocab> load_vocab(const std::string& path, int64_t expected_vocab_size) {
  PLIMSOLL_ASSIGN(std::shared_ptr<MappedFile> file, open_file(path));
  if (!has_gguf_magic(bytes_of(*file))) {
    if (expected_vocab_size < 0) return load_llama2c_vocab(path);  // every entry in the file
    return load_llama2c_vocab(path, expected_vocab_size);
  }
  PLIMSOLL_ASSIGN(const GgufFile g, parse_gguf(*file));
  PLIMSOLL_ASSIGN(std::optional<Vocab> v, vocab_from_gguf(g));
  if (!v) return make_error(ErrorCode::kNotFound, path + ": has no tokenizer.ggml.tokens");
  if (expected_vocab_size > 0 && v->size() != expected_vocab_size) {
    return invalid(path, "vocabulary has " + std::to_string(v->size()) + " tokens, expected " +
                             std::to_string(expected_vocab_size));
  }
  return std::move(*v);
}

}  // namespace plimsoll
