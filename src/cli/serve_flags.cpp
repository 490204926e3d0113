// CLI11 options from serve's settings table.
#include "cli/serve_flags.h"

#include <CLI/CLI.hpp>

#include "server/serve_settings.h"

namespace plimsoll::cli {

void add_serve_setting_flags(CLI::App& cmd, ServeSettingFlags& into, const ServeConfig& defaults, ServeFlagUse use) {
  const std::vector<ServeSetting>& rows = serve_settings();
  into.values.assign(rows.size(), "");
  into.options.assign(rows.size(), nullptr);
  for (size_t i = 0; i < rows.size(); ++i) {
    const ServeSetting& row = rows[i];
    if (use.only_in_plan && !row.in_plan) continue;
    CLI::Option* o = nullptr;
    if (row.takes_value()) {
      o = cmd.add_option(row.names, into.values[i], row.help);
      if (const std::string d = row.read(defaults); !d.empty()) o->default_str(d);
    } else {
      o = cmd.add_flag(row.names, row.help);
    }
    if (use.with_env && !row.env.empty()) o->envname(row.env);
    if (use.required && row.required) o->required();
    into.options[i] = o;
  }
}

Status apply_serve_setting_flags(const ServeSettingFlags& flags, ServeConfig& config) {
  const std::vector<ServeSetting>& rows = serve_settings();
  for (size_t i = 0; i < rows.size() && i < flags.options.size(); ++i) {
    const CLI::Option* o = flags.options[i];
    if (o == nullptr || o->count() == 0) continue;
    const std::string text = rows[i].takes_value() ? flags.values[i] : "true";
    PLIMSOLL_TRY(write_serve_setting(rows[i], config, rows[i].flag(), text));
  }
  return {};
}

}  // namespace plimsoll::cli
