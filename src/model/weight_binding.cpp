// Weight binding shared by all architectures: tensor lookups with shape and
// dtype checks, fused q/k/v slicing, and the dispatch on config.arch.
#include "model/weight_binding.h"

namespace plimsoll::binding {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// Rows [first, first + n) of a row-major matrix, as a view into the same bytes.
const TensorView* row_slice(DecoderWeights& w, const TensorView& m, int64_t first, int64_t n,
                            const std::string& name) {
  if (!w.slices) w.slices = std::make_shared<std::deque<TensorView>>();
  TensorView v = m;
  v.name = name;
  v.shape = m.shape.size() == 1 ? std::vector<int64_t>{n} : std::vector<int64_t>{n, m.cols()};
  const int64_t row_bytes = m.shape.size() == 1 ? dtype_row_bytes(m.dtype, 1) : m.row_bytes();
  v.data = m.data + first * row_bytes;
  v.n_bytes = n * row_bytes;
  w.slices->push_back(std::move(v));
  return &w.slices->back();
}

Status bind_fused_qkv(const ModelConfig& c, const TensorStore& t, const std::string& p,
                      DecoderWeights& w, LayerWeights& lw) {
  const int64_t d = c.dim, kv = c.kv_dim();
  PLIMSOLL_ASSIGN(const TensorView* qkv, matrix(t, p + "attn_qkv.weight", d + 2 * kv, d));
  lw.wq = row_slice(w, *qkv, 0, d, p + "attn_q.weight");
  lw.wk = row_slice(w, *qkv, d, kv, p + "attn_k.weight");
  lw.wv = row_slice(w, *qkv, d + kv, kv, p + "attn_v.weight");
  PLIMSOLL_ASSIGN(const TensorView* b,
                  optional_f32_vector(t, p + "attn_qkv.bias", d + 2 * kv, c.qkv_bias));
  if (b) {
    lw.bq = row_slice(w, *b, 0, d, p + "attn_q.bias");
    lw.bk = row_slice(w, *b, d, kv, p + "attn_k.bias");
    lw.bv = row_slice(w, *b, d + kv, kv, p + "attn_v.bias");
  }
  return {};
}

Status bind_split_qkv(const ModelConfig& c, const TensorStore& t, const std::string& p,
                      LayerWeights& lw) {
  const int64_t d = c.dim, kv = c.kv_dim();
  PLIMSOLL_ASSIGN(lw.wq, matrix(t, p + "attn_q.weight", d, d));
  PLIMSOLL_ASSIGN(lw.wk, matrix(t, p + "attn_k.weight", kv, d));
  PLIMSOLL_ASSIGN(lw.wv, matrix(t, p + "attn_v.weight", kv, d));
  PLIMSOLL_ASSIGN(lw.bq, optional_f32_vector(t, p + "attn_q.bias", d, c.qkv_bias));
  PLIMSOLL_ASSIGN(lw.bk, optional_f32_vector(t, p + "attn_k.bias", kv, c.qkv_bias));
  PLIMSOLL_ASSIGN(lw.bv, optional_f32_vector(t, p + "attn_v.bias", kv, c.qkv_bias));
  return {};
}

}  // namespace

Result<const TensorView*> f32_vector(const TensorStore& t, const std::string& name, int64_t n) {
  PLIMSOLL_ASSIGN(const TensorView* v, t.get(name, {n}));
  if (v->dtype != DType::kF32) {
    return make_error(ErrorCode::kUnsupported, "tensor '" + name + "' must be f32, is " +
                                                   std::string(dtype_name(v->dtype)));
  }
  return v;
}

Result<const TensorView*> optional_f32_vector(const TensorStore& t, const std::string& name,
                                              int64_t n, bool wanted) {
  if (wanted) return f32_vector(t, name, n);
  if (t.find(name)) {
    return make_error(ErrorCode::kInvalidFile,
                      "tensor '" + name + "' is present but the config has no such bias");
  }
  return static_cast<const TensorView*>(nullptr);
}

Result<const TensorView*> matrix(const TensorStore& t, const std::string& name, int64_t rows,
                                 int64_t cols) {
  return t.get(name, {rows, cols});
}

Status bind_norm(const ModelConfig& c, const TensorStore& t, const std::string& prefix,
                 const TensorView** weight, const TensorView** bias) {
  PLIMSOLL_ASSIGN(*weight, f32_vector(t, prefix + ".weight", c.dim));
  PLIMSOLL_ASSIGN(*bias, optional_f32_vector(t, prefix + ".bias", c.dim, c.norm_has_bias()));
  return {};
}

Status bind_attention(const ModelConfig& c, const TensorStore& t, const std::string& p,
                      DecoderWeights& w, LayerWeights& lw) {
  if (t.find(p + "attn_qkv.weight")) {
    PLIMSOLL_TRY(bind_fused_qkv(c, t, p, w, lw));
  } else {
    PLIMSOLL_TRY(bind_split_qkv(c, t, p, lw));
  }
  PLIMSOLL_ASSIGN(lw.wo, matrix(t, p + "attn_output.weight", c.dim, c.dim));
  PLIMSOLL_ASSIGN(lw.bo, optional_f32_vector(t, p + "attn_output.bias", c.dim, c.out_bias));
  return {};
}

Status bind_ffn(const ModelConfig& c, const TensorStore& t, const std::string& p,
                LayerWeights& lw) {
  const int64_t d = c.dim, f = c.ffn_dim;
  const bool gated = c.ffn == FfnKind::kSwiGlu;
  if (gated) {
    PLIMSOLL_ASSIGN(lw.w_gate, matrix(t, p + "ffn_gate.weight", f, d));
  } else if (t.find(p + "ffn_gate.weight")) {
    return make_error(ErrorCode::kInvalidFile,
                      "tensor '" + p + "ffn_gate.weight' is present but the feed-forward is not gated");
  }
  PLIMSOLL_ASSIGN(lw.b_gate, optional_f32_vector(t, p + "ffn_gate.bias", f, gated && c.ffn_bias));
  PLIMSOLL_ASSIGN(lw.w_up, matrix(t, p + "ffn_up.weight", f, d));
  PLIMSOLL_ASSIGN(lw.b_up, optional_f32_vector(t, p + "ffn_up.bias", f, c.ffn_bias));
  PLIMSOLL_ASSIGN(lw.w_down, matrix(t, p + "ffn_down.weight", d, f));
  PLIMSOLL_ASSIGN(lw.b_down, optional_f32_vector(t, p + "ffn_down.bias", d, c.ffn_bias));
  return {};
}

Status bind_common(const ModelConfig& c, const TensorStore& t, DecoderWeights& w) {
  const int64_t dim = c.dim, vocab = c.vocab_size;
  PLIMSOLL_ASSIGN(w.token_embd, matrix(t, "token_embd.weight", vocab, dim));
  PLIMSOLL_TRY(bind_norm(c, t, "output_norm", &w.output_norm, &w.output_norm_b));
  if (c.tied_embeddings || !t.find("output.weight")) {
    w.output = w.token_embd;
  } else {
    PLIMSOLL_ASSIGN(w.output, matrix(t, "output.weight", vocab, dim));
  }
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + str(l) + ".";
    LayerWeights lw;
    PLIMSOLL_TRY(bind_norm(c, t, p + "attn_norm", &lw.attn_norm, &lw.attn_norm_b));
    PLIMSOLL_TRY(bind_attention(c, t, p, w, lw));
    PLIMSOLL_TRY(bind_norm(c, t, p + "ffn_norm", &lw.ffn_norm, &lw.ffn_norm_b));
    PLIMSOLL_TRY(bind_ffn(c, t, p, lw));
    w.layers.push_back(lw);
  }
  return {};
}

Status check_geometry(const ModelConfig& c) {
  const bool rope = c.positions == PositionKind::kRope;
  if (c.dim <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.n_layers <= 0 || c.ffn_dim <= 0 ||
      c.vocab_size <= 0 || c.dim % c.n_heads != 0 || c.n_heads % c.n_kv_heads != 0 ||
      (rope && c.head_dim() % 2 != 0)) {
    return make_error(ErrorCode::kInvalidFile,
                      "inconsistent " + c.arch + " hyper-parameters: dim " + str(c.dim) + ", heads " +
                          str(c.n_heads) + ", kv heads " + str(c.n_kv_heads) + ", layers " +
                          str(c.n_layers) + ", ffn " + str(c.ffn_dim) + ", vocab " + str(c.vocab_size));
  }
  return {};
}

}  // namespace plimsoll::binding

namespace plimsoll {

Result<DecoderWeights> bind_decoder_weights(const ModelConfig& config, const TensorStore& tensors) {
  if (config.arch == "llama") return bind_llama_family(config, tensors);
  if (config.arch == "gpt2") return bind_gpt2(config, tensors);
  if (config.arch == "bloom") return bind_bloom(config, tensors);
  return make_error(ErrorCode::kUnsupported, "architecture '" + config.arch +
                                                 "' is not supported (llama, gpt2, bloom)");
}

}  // namespace plimsoll
