// --kv-cache-dtype: CLI11 checks the name, kv_cache_dtype_from_name maps it.
#include "cli/kv_cache_flag.h"

#include <CLI/CLI.hpp>

#include "server/engine_setup.h"

namespace plimsoll::cli {

CLI::Option* add_kv_cache_dtype_flag(CLI::App& cmd, DType& value, const std::string& env) {
  CLI::Option* o = cmd.add_option_function<std::string>(
      "--kv-cache-dtype", [&value](const std::string& name) { value = kv_cache_dtype_from_name(name).value(); },
      "KV cache elements: f16 (half the bytes per token) or f32 (exact)");
  o->check(CLI::IsMember({"f16", "f32"}, CLI::ignore_case))->default_str(kv_cache_dtype_name(value));
  if (!env.empty()) o->envname(env);
  return o;
}

}  // namespace plimsoll::cli
