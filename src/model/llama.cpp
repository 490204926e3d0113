// Binding of the Llama family (Llama, Mistral, Qwen2): RMSNorm, RoPE, SwiGLU,
// split or fused q/k/v with the biases the config names (Qwen2: q/k/v).
#include "model/llama.h"

#include "model/weight_binding.h"

namespace plimsoll {

Result<DecoderWeights> bind_llama_family(const ModelConfig& c, const TensorStore& t) {
  PLIMSOLL_TRY(binding::check_geometry(c));
  if (c.norm != NormKind::kRms || c.positions != PositionKind::kRope ||
      c.ffn != FfnKind::kSwiGlu || c.embed_norm) {
    return make_error(ErrorCode::kInvalidArgument,
                      "a llama config must use RMSNorm, RoPE and SwiGLU without an embedding norm");
  }
  DecoderWeights w;
  PLIMSOLL_TRY(binding::bind_common(c, t, w));
  return w;
}

}  // namespace plimsoll
