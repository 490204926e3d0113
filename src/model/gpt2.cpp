// Binding of GPT-2: LayerNorm with biases, learned absolute positions
// (position_embd), fused or split q/k/v, biases everywhere, GELU feed-forward.
#include "model/weight_binding.h"

namespace plimsoll {

Result<DecoderWeights> bind_gpt2(const ModelConfig& c, const TensorStore& t) {
  PLIMSOLL_TRY(binding::check_geometry(c));
  if (c.norm != NormKind::kLayer || c.positions != PositionKind::kLearned ||
      c.ffn != FfnKind::kGeluTanh || c.embed_norm || c.max_seq_len <= 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "a gpt2 config must use LayerNorm, learned positions (max_seq_len > 0) and "
                      "GELU without an embedding norm");
  }
  DecoderWeights w;
  PLIMSOLL_ASSIGN(w.position_embd,
                  binding::matrix(t, "position_embd.weight", c.max_seq_len, c.dim));
  PLIMSOLL_TRY(binding::bind_common(c, t, w));
  return w;
}

}  // namespace plimsoll
