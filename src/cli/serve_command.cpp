// `plimsoll serve`: its flags (each with an environment variable, the container
// convention) come from serve's settings table (server/serve_settings.cpp);
// validation, then run_serve().
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/model_reference.h"
#include "cli/serve_flags.h"
#include "server/serve.h"

namespace plimsoll::cli {
namespace {

struct ServeFlags {
  ServeConfig config;
  ServeSettingFlags settings;
};

int run(ServeFlags& f) {
  ServeConfig& c = f.config;
  if (Status st = apply_serve_setting_flags(f.settings, c); !st.ok()) {
    return spdlog::error("{}", st.error().message), 2;
  }
  const std::string given = c.engine.model_path;
  HubFlags hub;
  hub.revision = c.model_revision;
  hub.offline = c.hub_offline;
  if (!resolve_model_in_place(c.engine.model_path, hub)) return 1;
  if (c.api.model_id.empty() && given != c.engine.model_path) c.api.model_id = given;  // the repo id, as TGI reports it
  return run_serve(c);
}

}  // namespace

Runner add_serve_command(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve a model over HTTP (TGI and OpenAI wire formats) within a memory plan");
  add_serve_setting_flags(*cmd, f->settings, f->config, {});
  return [f] { return run(*f); };
}

}  // namespace plimsoll::cli
