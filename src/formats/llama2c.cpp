// llama2.c checkpoint reader: validates the 7-int header and the exact file
// length, then maps each weight block to GGUF-named F32 views into the bytes.
#include "formats/llama2c.h"

#include <array>
#include <cstring>
#include <vector>

#include "formats/byte_reader.h"

namespace plimsoll {
namespace {

constexpr int64_t kMaxHeaderValue = int64_t{1} << 24;

struct Header {
  int64_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0;
  int64_t vocab_size = 0;  // negative: the classifier is stored (not shared)
  int64_t seq_len = 0;
};

// One block of floats in file order: `layers` copies (0 = one global tensor)
// of `shape`; an empty name is skipped (the legacy RoPE tables).
struct Block {
  std::string name;  // "token_embd.weight" or, per layer, "attn_q.weight"
  std::vector<int64_t> shape;
  int64_t layers = 0;
};

Result<Header> read_header(ByteReader& r, std::span<const std::byte> bytes) {
  if (r.remaining_bytes() >= 4) {
    PLIMSOLL_ASSIGN(auto magic, r.read_bytes(4, "magic"));
    if (std::memcmp(magic.data(), "ak42", 4) == 0) {
      return r.error(ErrorCode::kUnsupported,
                     "llama2.c export version 1/2 (magic 'ak42') is not supported");
    }
  }
  r = ByteReader(bytes, r.name());  // the magic check consumed nothing
  std::array<int32_t, 7> v{};
  for (int32_t& x : v) {
    PLIMSOLL_ASSIGN(x, r.read_i32("llama2.c header"));
  }
  return Header{v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
}

Status check_field(const ByteReader& r, const char* field, int64_t value) {
  if (value < 1 || value > kMaxHeaderValue) {
    return r.error(ErrorCode::kInvalidFile, std::string("llama2.c header has ") + field + " " +
                                                std::to_string(value) + ", must be 1 to " +
                                                std::to_string(kMaxHeaderValue));
  }
  return {};
}

Status check_header(const ByteReader& r, const Header& h) {
  PLIMSOLL_TRY(check_field(r, "dim", h.dim));
  PLIMSOLL_TRY(check_field(r, "hidden_dim", h.hidden_dim));
  PLIMSOLL_TRY(check_field(r, "n_layers", h.n_layers));
  PLIMSOLL_TRY(check_field(r, "n_heads", h.n_heads));
  PLIMSOLL_TRY(check_field(r, "n_kv_heads", h.n_kv_heads));
  PLIMSOLL_TRY(check_field(r, "vocab_size", h.vocab_size < 0 ? -h.vocab_size : h.vocab_size));
  PLIMSOLL_TRY(check_field(r, "seq_len", h.seq_len));
  if (h.dim % h.n_heads != 0 || (h.dim / h.n_heads) % 2 != 0) {
    return r.error(ErrorCode::kInvalidFile, "llama2.c header: dim " + std::to_string(h.dim) +
                                                " / n_heads " + std::to_string(h.n_heads) +
                                                " must give an even head size");
  }
  if (h.n_kv_heads > h.n_heads || h.n_heads % h.n_kv_heads != 0) {
    return r.error(ErrorCode::kInvalidFile, "llama2.c header: n_heads " +
                                                std::to_string(h.n_heads) +
                                                " is not a multiple of n_kv_heads " +
                                                std::to_string(h.n_kv_heads));
  }
  return {};
}

ModelConfig config_of(const Header& h, const std::string& path) {
  ModelConfig c;
  c.arch = "llama";
  const size_t slash = path.find_last_of('/');
  c.name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (const size_t dot = c.name.find_last_of('.'); dot != std::string::npos && dot > 0) {
    c.name.resize(dot);
  }
  c.dim = h.dim;
  c.ffn_dim = h.hidden_dim;
  c.n_layers = h.n_layers;
  c.n_heads = h.n_heads;
  c.n_kv_heads = h.n_kv_heads;
  c.vocab_size = h.vocab_size < 0 ? -h.vocab_size : h.vocab_size;
  c.max_seq_len = h.seq_len;
  c.norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.rope_layout = RopeLayout::kInterleaved;
  c.tied_embeddings = h.vocab_size > 0;
  return c;
}

std::vector<Block> layout_of(const ModelConfig& c) {
  const int64_t d = c.dim, kv = c.kv_dim(), f = c.ffn_dim, L = c.n_layers;
  const int64_t rope_table = c.max_seq_len * c.head_dim() / 2;
  std::vector<Block> b = {
      {"token_embd.weight", {c.vocab_size, d}, 0}, {"attn_norm.weight", {d}, L},
      {"attn_q.weight", {d, d}, L},                {"attn_k.weight", {kv, d}, L},
      {"attn_v.weight", {kv, d}, L},               {"attn_output.weight", {d, d}, L},
      {"ffn_norm.weight", {d}, L},                 {"ffn_gate.weight", {f, d}, L},
      {"ffn_down.weight", {d, f}, L},              {"ffn_up.weight", {f, d}, L},
      {"output_norm.weight", {d}, 0},              {"", {rope_table}, 0},
      {"", {rope_table}, 0},
  };
  if (!c.tied_embeddings) b.push_back({"output.weight", {c.vocab_size, d}, 0});
  return b;
}

// Floats of one copy of the block's tensor, and of the whole block; false on overflow.
bool block_floats(const Block& b, int64_t* one, int64_t* all) {
  *one = 1;
  for (int64_t d : b.shape) {
    if (!checked_mul(*one, d, one)) return false;
  }
  return checked_mul(*one, b.layers ? b.layers : 1, all);
}

Result<int64_t> expected_bytes(const ByteReader& r, const std::vector<Block>& layout) {
  int64_t floats = 0;
  for (const Block& b : layout) {
    int64_t one = 0, all = 0;
    if (!block_floats(b, &one, &all) || !checked_add(floats, all, &floats)) {
      return r.error(ErrorCode::kInvalidFile, "llama2.c header implies an impossibly large file");
    }
  }
  int64_t bytes = 0;
  if (!checked_mul(floats, 4, &bytes) || !checked_add(bytes, kLlama2cHeaderBytes, &bytes)) {
    return r.error(ErrorCode::kInvalidFile, "llama2.c header implies an impossibly large file");
  }
  return bytes;
}

Status add_views(const std::vector<Block>& layout, const std::byte* data, TensorStore& store) {
  const std::byte* p = data + kLlama2cHeaderBytes;
  for (const Block& b : layout) {
    int64_t one = 0, all = 0;
    block_floats(b, &one, &all);
    for (int64_t l = 0; !b.name.empty() && l < (b.layers ? b.layers : 1); ++l) {
      std::string name = b.layers ? "blk." + std::to_string(l) + "." + b.name : b.name;
      PLIMSOLL_TRY(store.add(TensorView{std::move(name), DType::kF32, b.shape, p + l * one * 4,
                                        one * 4}));
    }
    p += all * 4;
  }
  return {};
}

}  // namespace

Result<LoadedModel> parse_llama2c_model(std::span<const std::byte> bytes, const std::string& path) {
  ByteReader r(bytes, path);
  PLIMSOLL_ASSIGN(const Header h, read_header(r, bytes));
  PLIMSOLL_TRY(check_header(r, h));
  LoadedModel m;
  m.format = ModelFormat::kLlama2c;
  m.path = path;
  m.config = config_of(h, path);
  const std::vector<Block> layout = layout_of(m.config);
  PLIMSOLL_ASSIGN(const int64_t want_bytes, expected_bytes(r, layout));
  if (want_bytes != static_cast<int64_t>(bytes.size())) {
    return r.error(ErrorCode::kInvalidFile,
                   "llama2.c checkpoint should be " + std::to_string(want_bytes) +
                       " bytes for its header (dim " + std::to_string(h.dim) + ", layers " +
                       std::to_string(h.n_layers) + ", vocab " + std::to_string(h.vocab_size) +
                       "), but is " + std::to_string(bytes.size()) + " bytes");
  }
  Status added = add_views(layout, bytes.data(), m.tensors);
  if (!added.ok()) return added.error().with_context(path);
  PLIMSOLL_TRY(validate_decoder_tensors(m.config, m.tensors, path));
  return m;
}

}  // namespace plimsoll
