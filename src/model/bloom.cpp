// Binding of BLOOM: LayerNorm on the embeddings and in every block, ALiBi
// positions (no position tensors), fused q/k/v, biases everywhere, GELU.
#include "model/weight_binding.h"

namespace plimsoll {

Result<DecoderWeights> bind_bloom(const ModelConfig& c, const TensorStore& t) {
  PLIMSOLL_TRY(binding::check_geometry(c));
  if (c.norm != NormKind::kLayer || c.positions != PositionKind::kAlibi ||
      c.ffn != FfnKind::kGeluTanh || !c.embed_norm) {
    return make_error(ErrorCode::kInvalidArgument,
                      "a bloom config must use LayerNorm, ALiBi, GELU and an embedding norm");
  }
  DecoderWeights w;
  PLIMSOLL_ASSIGN(w.embd_norm, binding::f32_vector(t, "token_embd_norm.weight", c.dim));
  PLIMSOLL_ASSIGN(w.embd_norm_b, binding::f32_vector(t, "token_embd_norm.bias", c.dim));
  PLIMSOLL_TRY(binding::bind_common(c, t, w));
  return w;
}

}  // namespace plimsoll
