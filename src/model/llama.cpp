// Llama weight binding and the reference forward pass (RMSNorm, RoPE, GQA
// attention, SwiGLU), written to be read: one token, one layer at a time.
#include "model/llama.h"

#include <cmath>
#include <string>

#include "kernels/kernels.h"

namespace plimsoll {
namespace {

Result<const TensorView*> get_f32(const TensorStore& t, const std::string& name,
                                  std::vector<int64_t> shape) {
  PLIMSOLL_ASSIGN(const TensorView* v, t.get(name, shape));
  if (v->dtype != DType::kF32) {
    return make_error(ErrorCode::kUnsupported, "tensor '" + name + "' must be f32, is " +
                                                   std::string(dtype_name(v->dtype)));
  }
  return v;
}

}  // namespace

Result<LlamaWeights> bind_llama_weights(const ModelConfig& c, const TensorStore& t) {
  if (c.dim <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.n_layers <= 0 || c.ffn_dim <= 0 ||
      c.vocab_size <= 0 || c.dim % c.n_heads != 0 || c.n_heads % c.n_kv_heads != 0 ||
      c.head_dim() % 2 != 0) {
    return make_error(ErrorCode::kInvalidFile,
                      "inconsistent llama hyper-parameters: dim " + std::to_string(c.dim) +
                          ", heads " + std::to_string(c.n_heads) + ", kv heads " +
                          std::to_string(c.n_kv_heads) + ", layers " + std::to_string(c.n_layers));
  }
  const int64_t dim = c.dim, kv = c.kv_dim(), ffn = c.ffn_dim, vocab = c.vocab_size;
  LlamaWeights w;
  PLIMSOLL_ASSIGN(w.token_embd, t.get("token_embd.weight", {vocab, dim}));
  PLIMSOLL_ASSIGN(w.output_norm, get_f32(t, "output_norm.weight", {dim}));
  if (c.tied_embeddings || !t.find("output.weight")) {
    w.output = w.token_embd;
  } else {
    PLIMSOLL_ASSIGN(w.output, t.get("output.weight", {vocab, dim}));
  }
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LlamaLayerWeights lw;
    PLIMSOLL_ASSIGN(lw.attn_norm, get_f32(t, p + "attn_norm.weight", {dim}));
    PLIMSOLL_ASSIGN(lw.wq, t.get(p + "attn_q.weight", {dim, dim}));
    PLIMSOLL_ASSIGN(lw.wk, t.get(p + "attn_k.weight", {kv, dim}));
    PLIMSOLL_ASSIGN(lw.wv, t.get(p + "attn_v.weight", {kv, dim}));
    PLIMSOLL_ASSIGN(lw.wo, t.get(p + "attn_output.weight", {dim, dim}));
    PLIMSOLL_ASSIGN(lw.ffn_norm, get_f32(t, p + "ffn_norm.weight", {dim}));
    PLIMSOLL_ASSIGN(lw.w_gate, t.get(p + "ffn_gate.weight", {ffn, dim}));
    PLIMSOLL_ASSIGN(lw.w_up, t.get(p + "ffn_up.weight", {ffn, dim}));
    PLIMSOLL_ASSIGN(lw.w_down, t.get(p + "ffn_down.weight", {dim, ffn}));
    w.layers.push_back(lw);
  }
  return w;
}

ReferenceKvCache::ReferenceKvCache(const ModelConfig& config, int64_t max_seq)
    : max_seq_len(max_seq),
      kv_dim(config.kv_dim()),
      k(static_cast<size_t>(config.n_layers * max_seq * config.kv_dim())),
      v(static_cast<size_t>(config.n_layers * max_seq * config.kv_dim())) {}

LlamaReference::LlamaReference(const ModelConfig& config, LlamaWeights weights)
    : config_(config), weights_(std::move(weights)) {
  const auto n = [](int64_t v) { return static_cast<size_t>(v); };
  x_.resize(n(config.dim));
  xb_.resize(n(config.dim));
  xb2_.resize(n(config.dim));
  q_.resize(n(config.dim));
  k_.resize(n(config.kv_dim()));
  v_.resize(n(config.kv_dim()));
  hb_.resize(n(config.ffn_dim));
  hb2_.resize(n(config.ffn_dim));
}

void LlamaReference::attention(int64_t layer, int64_t pos, ReferenceKvCache& cache) {
  const int64_t head_dim = config_.head_dim();
  const int64_t group = config_.n_heads / config_.n_kv_heads;  // query heads per kv head
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  att_.resize(static_cast<size_t>(pos + 1));
  for (int64_t h = 0; h < config_.n_heads; ++h) {
    const float* q = q_.data() + h * head_dim;
    const int64_t kv_off = (h / group) * head_dim;
    for (int64_t t = 0; t <= pos; ++t) {
      att_[static_cast<size_t>(t)] =
          kernels::dot_f32(q, cache.k_at(layer, t) + kv_off, head_dim) * scale;
    }
    kernels::softmax(att_.data(), pos + 1);
    float* out = xb_.data() + h * head_dim;  // [head_dim]
    for (int64_t i = 0; i < head_dim; ++i) out[i] = 0.0f;
    for (int64_t t = 0; t <= pos; ++t) {
      kernels::axpy_f32(out, att_[static_cast<size_t>(t)], cache.v_at(layer, t) + kv_off, head_dim);
    }
  }
}

void LlamaReference::forward(int32_t token, int64_t pos, ReferenceKvCache& cache, float* logits,
                             ThreadPool* pool) {
  const ModelConfig& c = config_;
  const int64_t head_dim = c.head_dim();
  const bool interleaved = c.rope_layout == RopeLayout::kInterleaved;
  kernels::dequantize_row(weights_.token_embd->dtype, weights_.token_embd->row(token), x_.data(),
                          c.dim);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LlamaLayerWeights& lw = weights_.layers[static_cast<size_t>(l)];
    // attention block: x += wo(attn(rope(wq xn), rope(wk xn), wv xn))
    kernels::rmsnorm(xb_.data(), x_.data(), lw.attn_norm->f32(), c.dim, c.norm_eps);
    kernels::matmul(*lw.wq, xb_.data(), 1, q_.data(), pool);
    kernels::matmul(*lw.wk, xb_.data(), 1, k_.data(), pool);
    kernels::matmul(*lw.wv, xb_.data(), 1, v_.data(), pool);
    for (int64_t h = 0; h < c.n_heads; ++h) {
      kernels::rope(q_.data() + h * head_dim, head_dim, pos, c.rope_theta, interleaved);
    }
    for (int64_t h = 0; h < c.n_kv_heads; ++h) {
      kernels::rope(k_.data() + h * head_dim, head_dim, pos, c.rope_theta, interleaved);
    }
    std::copy(k_.begin(), k_.end(), cache.k_at(l, pos));
    std::copy(v_.begin(), v_.end(), cache.v_at(l, pos));
    attention(l, pos, cache);
    kernels::matmul(*lw.wo, xb_.data(), 1, xb2_.data(), pool);
    for (int64_t i = 0; i < c.dim; ++i) x_[static_cast<size_t>(i)] += xb2_[static_cast<size_t>(i)];
    // feed-forward block: x += w_down(silu(w_gate xn) * w_up xn)
    kernels::rmsnorm(xb_.data(), x_.data(), lw.ffn_norm->f32(), c.dim, c.norm_eps);
    kernels::matmul(*lw.w_gate, xb_.data(), 1, hb_.data(), pool);
    kernels::matmul(*lw.w_up, xb_.data(), 1, hb2_.data(), pool);
    kernels::swiglu(hb_.data(), hb_.data(), hb2_.data(), c.ffn_dim);
    kernels::matmul(*lw.w_down, hb_.data(), 1, xb2_.data(), pool);
    for (int64_t i = 0; i < c.dim; ++i) x_[static_cast<size_t>(i)] += xb2_[static_cast<size_t>(i)];
  }
  kernels::rmsnorm(x_.data(), x_.data(), weights_.output_norm->f32(), c.dim, c.norm_eps);
  kernels::matmul(*weights_.output, x_.data(), 1, logits, pool);
}

}  // namespace plimsoll
