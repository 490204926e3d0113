// serve's settings in one table: one row per setting (flag names, environment
// variable, help, value kind, whether it changes the memory plan, and how it is
// read from and written into ServeConfig). Defaults are ServeConfig's own. From
// this table `plimsoll serve` registers its flags, `plimsoll plan` the ones it
// accepts, the webhook reads a container's args and env, and the planner
// renders the "serve with" command and the ramp child's arguments.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "server/serve.h"

namespace plimsoll {

enum class SettingKind {
  kInt,     // a whole number ("0" or absent: unset, for the optional ones)
  kBytes,   // 12Gi, 300Mi, 2000000 (core/bytes.h parse_bytes)
  kNumber,  // a decimal: fractions, seconds, ratios
  kBool,    // true/false, given as a value (--huge-pages=false)
  kSwitch,  // a flag without a value (--offline)
  kString,
  kDType,   // f16 or f32
  kFractionOrBytes,  // 0.95 (of the limit) or a size: 480Mi
};

struct ServeSetting {
  std::string names;  // CLI11's form: "-p,--port"; the long name is the last
  std::string env;    // "" for none
  std::string help;
  SettingKind kind = SettingKind::kString;
  bool changes_plan = false;  // an input of the memory plan (the planner always renders it)
  bool in_plan = false;       // `plimsoll plan` accepts it (and the ramp child gets it)
  bool required = false;      // serve refuses to start without it
  // The value as its flag takes it; "" when unset (an optional left to the plan).
  std::function<std::string(const ServeConfig&)> read;
  // Parses `text` into the config; errors say what is wrong with the text.
  std::function<Status(ServeConfig&, const std::string& text)> write;

  std::string flag() const;                // the long name: "--port"
  std::vector<std::string> flags() const;  // every name: "-p", "--port"
  bool takes_value() const { return kind != SettingKind::kSwitch; }
};

// Every setting of `plimsoll serve`, in --help order.
const std::vector<ServeSetting>& serve_settings();
// The row for a flag name ("-p", "--port") or environment variable; null if none.
const ServeSetting* find_serve_setting_by_flag(const std::string& flag);
const ServeSetting* find_serve_setting_by_env(const std::string& env);

// row.write, with errors naming `what` (the flag, or "env NAME").
Status write_serve_setting(const ServeSetting& row, ServeConfig& config, const std::string& what,
                           const std::string& text);

// serve's arguments for `config` (without "serve"): every row that changes the
// plan, and every other one that differs from serve's default, in table order
// as flag + value ("--offline" alone). only_in_plan: just the rows plan accepts.
std::vector<std::string> render_serve_args(const ServeConfig& config, bool only_in_plan = false);
// The args as one shell command line: `plimsoll serve ...`, quoted where needed.
std::string render_serve_command(const ServeConfig& config);

}  // namespace plimsoll
