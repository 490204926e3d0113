// Internal to model/: the binding of a description's tensors into slots.
#pragma once

#include "formats/architecture.h"
#include "model/decoder_weights.h"

namespace plimsoll::binding {

// Checks the head geometry (dim, heads, kv heads, even head_dim for RoPE).
Status check_geometry(const ModelConfig& c);

}  // namespace plimsoll::binding
