// --kv-cache-dtype for the commands that plan or run the engine (serve, bench, plan).
#pragma once

#include <string>

#include "core/dtype.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace plimsoll::cli {

// Adds --kv-cache-dtype f16|f32 (any case) writing `value`; `env` names its
// environment variable ("" for none).
CLI::Option* add_kv_cache_dtype_flag(CLI::App& cmd, DType& value, const std::string& env);

}  // namespace plimsoll::cli
