// GenerationDefaults and TokenizerSettings moved to core/generation_defaults.h;
// this forward stays until branches in flight have moved their includes.
#pragma once

#include "core/generation_defaults.h"
