// `plimsoll batch`: a JSONL file of prompts through a server in chunks of its
// safe batch size, resumable; the work is client::run_batch_job.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "client/batch_job.h"

namespace plimsoll::cli {
namespace {

struct BatchFlags {
  client::JobOptions job;
  std::string route = "generate";
  int64_t max_retries = 8;
  double deadline_seconds = 600;
};

int run_batch(BatchFlags& flags) {
  std::optional<client::Route> route = client::parse_route(flags.route);
  if (!route) {
    spdlog::error("--route must be generate, completions or chat, not {}", flags.route);
    return 1;
  }
  flags.job.route = *route;
  flags.job.retry.max_retries = flags.max_retries;
  flags.job.retry.deadline_ms = static_cast<int64_t>(flags.deadline_seconds * 1000.0);
  client::ClientResult<client::JobSummary> summary = client::run_batch_job(flags.job);
  if (!summary) {
    spdlog::error("batch: {}", summary.error().describe());
    return 1;
  }
  std::fputs(client::format_summary(*summary).c_str(), stderr);
  return summary->failed == 0 ? 0 : 2;
}

}  // namespace

Runner add_batch_command(CLI::App& app) {
  auto flags = std::make_shared<BatchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "batch", "Send a JSONL file of prompts to a server in chunks of its safe batch size; resumable");
  cmd->add_option("--url", flags->job.url, "Server base URL, e.g. http://127.0.0.1:8080")->required();
  cmd->add_option("--input", flags->job.input_path, "JSONL: {\"prompt\", \"parameters\"} or {\"messages\"}, "
                                                    "optional \"id\"")
      ->required();
  cmd->add_option("--output", flags->job.output_path,
                  "JSONL results in input order; also the checkpoint (a rerun does only the missing items)")
      ->required();
  cmd->add_option("--parallel", flags->job.parallel, "Requests in flight at once")->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--chunk-size", flags->job.chunk_size,
                  "Items per request at most (0: the server's safe_client_batch_size)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--max-retries", flags->max_retries, "Retries of one request after 429")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--deadline", flags->deadline_seconds,
                  "Seconds after its first try that a request stops being retried (server away, 503, 429)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--route", flags->route, "generate (TGI /generate), completions or chat (OpenAI)")
      ->capture_default_str();
  cmd->add_option("--api-key", flags->job.client.api_key, "Sent as Authorization: Bearer")->envname("PLIMSOLL_API_KEY");
  cmd->add_option("--priority", flags->job.priority,
                  "vLLM's `priority` sent with each request whose parameters give none: lower runs first within a "
                  "tenant and preempts higher; interactive requests default to 0")
      ->capture_default_str();
  return [flags] { return run_batch(*flags); };
}

}  // namespace plimsoll::cli
