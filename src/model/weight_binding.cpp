// Weight binding for every architecture from its description
// (formats/architecture.h): each tensor the config needs is looked up with
// its shape and dtype and put in its slot; fused q/k/v (and Phi-3's fused
// gate/up) are sliced by rows.
#include "model/weight_binding.h"

namespace plimsoll::binding {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// Rows [first, first + n) of a row-major matrix (or vector), as a view into the same bytes.
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

// The fused q/k/v tensors of one layer until they are sliced.
struct Fused {
  const TensorView* qkv = nullptr;
  const TensorView* bqkv = nullptr;
  const TensorView* gate_up = nullptr;  // [2 f, d]: rows [gate; up]
};

const TensorView** slot_of(Slot s, DecoderWeights& w, LayerWeights& lw, Fused& f) {
  switch (s) {
    case Slot::kTokenEmbd: return &w.token_embd;
    case Slot::kPositionEmbd: return &w.position_embd;
    case Slot::kEmbdNorm: return &w.embd_norm;
    case Slot::kEmbdNormB: return &w.embd_norm_b;
    case Slot::kOutputNorm: return &w.output_norm;
    case Slot::kOutputNormB: return &w.output_norm_b;
    case Slot::kOutput: return &w.output;
    case Slot::kAttnNorm: return &lw.attn_norm;
    case Slot::kAttnNormB: return &lw.attn_norm_b;
    case Slot::kQ: return &lw.wq;
    case Slot::kK: return &lw.wk;
    case Slot::kV: return &lw.wv;
    case Slot::kQkv: return &f.qkv;
    case Slot::kBq: return &lw.bq;
    case Slot::kBk: return &lw.bk;
    case Slot::kBv: return &lw.bv;
    case Slot::kBqkv: return &f.bqkv;
    case Slot::kWo: return &lw.wo;
    case Slot::kBo: return &lw.bo;
    case Slot::kQNorm: return &lw.q_norm;
    case Slot::kKNorm: return &lw.k_norm;
    case Slot::kFfnNorm: return &lw.ffn_norm;
    case Slot::kFfnNormB: return &lw.ffn_norm_b;
    case Slot::kGate: return &lw.w_gate;
    case Slot::kBGate: return &lw.b_gate;
    case Slot::kUp: return &lw.w_up;
    case Slot::kBUp: return &lw.b_up;
    case Slot::kGateUp: return &f.gate_up;
    case Slot::kDown: return &lw.w_down;
    case Slot::kBDown: return &lw.b_down;
    case Slot::kAttnPostNorm: return &lw.attn_post_norm;
    case Slot::kFfnPostNorm: return &lw.ffn_post_norm;
    case Slot::kNone: return nullptr;
  }
  return nullptr;
}

Result<const TensorView*> lookup(const TensorStore& t, const ExpectedTensor& e) {
  PLIMSOLL_ASSIGN(const TensorView* v, t.get(e.name, e.shape));
  if (e.f32 && v->dtype != DType::kF32) {
    return make_error(ErrorCode::kUnsupported, "tensor '" + e.name + "' must be f32, is " +
                                                   std::string(dtype_name(v->dtype)));
  }
  return v;
}

void slice_fused(const ModelConfig& c, const std::string& p, const Fused& f, DecoderWeights& w,
                 LayerWeights& lw) {
  const int64_t q = c.q_dim(), kv = c.kv_dim();
  if (f.qkv) {
    lw.wq = row_slice(w, *f.qkv, 0, q, p + "attn_q.weight");
    lw.wk = row_slice(w, *f.qkv, q, kv, p + "attn_k.weight");
    lw.wv = row_slice(w, *f.qkv, q + kv, kv, p + "attn_v.weight");
  }
  if (f.gate_up) {
    lw.w_gate = row_slice(w, *f.gate_up, 0, c.ffn_dim, p + "ffn_gate.weight");
    lw.w_up = row_slice(w, *f.gate_up, c.ffn_dim, c.ffn_dim, p + "ffn_up.weight");
  }
  if (f.bqkv) {
    lw.bq = row_slice(w, *f.bqkv, 0, q, p + "attn_q.bias");
    lw.bk = row_slice(w, *f.bqkv, q, kv, p + "attn_k.bias");
    lw.bv = row_slice(w, *f.bqkv, q + kv, kv, p + "attn_v.bias");
  }
}

// A tensor the description names but this config does not use, present in
// the store (an unused bias, a gate of an ungated feed-forward): an error,
// as it would be silently ignored otherwise.
Status check_unwanted(const TensorStore& t, const std::vector<ExpectedTensor>& unwanted) {
  for (const ExpectedTensor& u : unwanted) {
    const bool alternative = u.slot == Slot::kQ || u.slot == Slot::kK || u.slot == Slot::kV ||
                             u.slot == Slot::kQkv || u.slot == Slot::kOutput || u.slot == Slot::kNone;
    if (!alternative && t.find(u.name)) {
      return make_error(ErrorCode::kInvalidFile,
                        "tensor '" + u.name + "' is present but the config does not use it");
    }
  }
  return {};
}

}  // namespace

Status check_geometry(const ModelConfig& c) {
  const bool rope = c.positions == PositionKind::kRope;
  if (c.dim <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.n_layers <= 0 || c.ffn_dim <= 0 ||
      c.vocab_size <= 0 || c.head_dim() <= 0 || (!c.head_dim_override && c.dim % c.n_heads != 0) ||
      c.n_heads % c.n_kv_heads != 0 || (rope && c.head_dim() % 2 != 0) ||
      (!c.rope_freq_factors.empty() && static_cast<int64_t>(c.rope_freq_factors.size()) != c.head_dim() / 2)) {
    return make_error(ErrorCode::kInvalidFile,
                      "inconsistent " + c.arch + " hyper-parameters: dim " + str(c.dim) + ", heads " +
                          str(c.n_heads) + ", kv heads " + str(c.n_kv_heads) + ", head dim " +
                          str(c.head_dim()) + ", layers " + str(c.n_layers) + ", ffn " + str(c.ffn_dim) +
                          ", vocab " + str(c.vocab_size));
  }
  return {};
}

}  // namespace plimsoll::binding

namespace plimsoll {

Result<DecoderWeights> bind_decoder_weights(const ModelConfig& config, const TensorStore& tensors) {
  const Architecture* a = architecture_named(config.arch);
  if (!a) {
    return make_error(ErrorCode::kUnsupported, "architecture '" + config.arch + "' is not supported");
  }
  PLIMSOLL_TRY(binding::check_geometry(config));
  std::vector<ExpectedTensor> unwanted;
  const std::vector<ExpectedTensor> expected = expected_tensors(*a, config, tensors, &unwanted);
  PLIMSOLL_TRY(binding::check_unwanted(tensors, unwanted));
  DecoderWeights w;
  w.layers.resize(static_cast<size_t>(config.n_layers));
  std::vector<binding::Fused> fused(static_cast<size_t>(config.n_layers));
  LayerWeights none;
  binding::Fused none_fused;
  for (const ExpectedTensor& e : expected) {
    const size_t l = static_cast<size_t>(e.layer);
    LayerWeights& lw = e.layer < 0 ? none : w.layers[l];
    binding::Fused& f = e.layer < 0 ? none_fused : fused[l];
    const TensorView** slot = binding::slot_of(e.slot, w, lw, f);
    if (!slot) continue;
    PLIMSOLL_ASSIGN(*slot, binding::lookup(tensors, e));
  }
  if (!w.output) w.output = w.token_embd;  // tied head
  for (size_t l = 0; l < fused.size(); ++l) {
    binding::slice_fused(config, "blk." + std::to_string(l) + ".", fused[l], w, w.layers[l]);
  }
  return w;
}

}  // namespace plimsoll
