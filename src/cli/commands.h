// The subcommands of the plimsoll binary; each registers its flags on the app
// and returns the function that runs it (exit code).
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace plimsoll::cli {

using Runner = std::function<int()>;

Runner add_generate_command(CLI::App& app);
Runner add_inspect_command(CLI::App& app);
Runner add_convert_command(CLI::App& app);
Runner add_tokenize_command(CLI::App& app);
Runner add_bench_command(CLI::App& app);
Runner add_serve_command(CLI::App& app);
Runner add_batch_command(CLI::App& app);
Runner add_webhook_command(CLI::App& app);
Runner add_plan_command(CLI::App& app);

}  // namespace plimsoll::cli
