// ModelConfig moved to core/model_config.h (kv/, memory/, engine/ and api/ no
// longer depend on the formats library); this forward stays until branches in
// flight have moved their includes.
#pragma once

#include "core/model_config.h"
