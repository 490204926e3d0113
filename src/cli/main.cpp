// plimsoll: the command-line entry point; one subcommand per job.
#include <CLI/CLI.hpp>
#include <map>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "core/stop_signals.h"

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("plimsoll"));
  CLI::App app{"plimsoll: a text-generation inference server that plans its memory"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "plimsoll 0.1.0");
  std::map<std::string, plimsoll::cli::Runner> runners;
  runners["generate"] = plimsoll::cli::add_generate_command(app);
  runners["convert"] = plimsoll::cli::add_convert_command(app);
  runners["inspect"] = plimsoll::cli::add_inspect_command(app);
  runners["tokenize"] = plimsoll::cli::add_tokenize_command(app);
  runners["bench"] = plimsoll::cli::add_bench_command(app);
  runners["serve"] = plimsoll::cli::add_serve_command(app);
  runners["batch"] = plimsoll::cli::add_batch_command(app);
  runners["webhook"] = plimsoll::cli::add_webhook_command(app);
  runners["plan"] = plimsoll::cli::add_plan_command(app);
  CLI11_PARSE(app, argc, argv);
  // Ctrl-C and SIGTERM stop every command, also one started with them ignored; commands
  // with something to clean up catch them instead (core/stop_signals.h).
  plimsoll::default_stop_signals();
  return runners.at(app.get_subcommands().front()->get_name())();
}
