// plimsoll: the command-line entry point; one subcommand per job.
#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"plimsoll: a text-generation inference server that plans its memory"};
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
