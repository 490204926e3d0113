// The Llama-family names of the generic decoder (weights, binding, reference
// forward), kept so that existing callers read as before.
#pragma once

#include "model/decoder_reference.h"
#include "model/decoder_weights.h"

namespace plimsoll {

using LlamaLayerWeights = LayerWeights;
using LlamaWeights = DecoderWeights;
using LlamaReference = DecoderReference;

// The earlier name of bind_decoder_weights: binds any supported architecture
// (config.arch), not only Llama.
inline Result<DecoderWeights> bind_llama_weights(const ModelConfig& config,
                                                 const TensorStore& tensors) {
  return bind_decoder_weights(config, tensors);
}

}  // namespace plimsoll
