// serve's settings table (server/serve_settings.h) as CLI11 options: `serve`
// registers every row, `plan` the rows it accepts; the values are parsed by the
// table after CLI11 has read args and environment.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "server/serve.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace plimsoll::cli {

struct ServeSettingFlags {
  std::vector<std::string> values;      // one per row of serve_settings(), as given
  std::vector<CLI::Option*> options;    // null for rows not registered
};

struct ServeFlagUse {
  bool only_in_plan = false;  // just the rows `plimsoll plan` accepts
  bool with_env = true;       // each row's environment variable too
  bool required = true;       // rows serve requires (--model) are required here
};

// Adds the rows' options to cmd with the table's names, env, help and defaults
// (the defaults of `defaults`); `into` must outlive parsing.
void add_serve_setting_flags(CLI::App& cmd, ServeSettingFlags& into, const ServeConfig& defaults, ServeFlagUse use);

// Writes every row given (by flag or environment) into config; errors name the flag.
Status apply_serve_setting_flags(const ServeSettingFlags& flags, ServeConfig& config);

}  // namespace plimsoll::cli
