// `plimsoll generate`: run one prompt through the reference engine and stream
// the text to stdout; speed figures go to stderr.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/model_loading.h"
#include "cli/model_reference.h"
#include "core/thread_pool.h"
#include "engine/generate.h"

namespace plimsoll::cli {
namespace {

struct GenerateFlags {
  std::string model;
  HubFlags hub;
  std::string tokenizer;
  std::string prompt;
  SamplingParams params;
  std::vector<std::string> stop;  // --stop (repeatable), into params.stop
  int64_t seed = -1;
  bool do_sample = false;
  int threads = 0;
};

// The model's generation_config.json for what the command line leaves out.
SamplingParams sampling_for(const GenerateFlags& f, const CLI::App& cmd, const LoadedModel& model) {
  SamplingParams params = f.params;
  params.do_sample = f.do_sample;
  params.stop = f.stop;
  if (!model.generation_defaults) return params;
  const GenerationDefaults& d = *model.generation_defaults;
  SamplingParams with = params;
  apply_generation_defaults(d, &with);
  auto given = [&cmd](const char* flag) { return cmd.count(flag) > 0; };
  if (!given("--do-sample")) params.do_sample = with.do_sample;
  if (!given("--temperature")) params.temperature = with.temperature;
  if (!given("--top-k")) params.top_k = with.top_k;
  if (!given("--top-p")) params.top_p = with.top_p;
  if (!given("--typical-p")) params.typical_p = with.typical_p;
  if (!given("--repetition-penalty")) params.repetition_penalty = with.repetition_penalty;
  if (!given("--max-new-tokens") && d.max_new_tokens && *d.max_new_tokens > 0) {
    params.max_new_tokens = *d.max_new_tokens;
  }
  return params;
}

int run_generate(GenerateFlags& f, const CLI::App& cmd) {
  if (!resolve_model_in_place(f.model, f.hub)) return 1;
  auto loaded = load_model_and_tokenizer(f.model, f.tokenizer);
  if (!loaded) {
    std::fprintf(stderr, "error: %s\n", loaded.error().message.c_str());
    return 1;
  }
  auto weights = bind_llama_weights(loaded->model.config, loaded->model.tensors);
  if (!weights) {
    std::fprintf(stderr, "error: %s: %s\n", f.model.c_str(), weights.error().message.c_str());
    return 1;
  }
  LlamaReference model(loaded->model.config, std::move(weights).value());
  SamplingParams params = sampling_for(f, cmd, loaded->model);
  if (f.seed >= 0) params.seed = static_cast<uint64_t>(f.seed);
  ThreadPool pool(f.threads > 0 ? f.threads : ThreadPool::hardware_threads());
  GenerateOptions options;
  options.pool = &pool;
  if (loaded->model.generation_defaults) options.extra_eos_ids = loaded->model.generation_defaults->eos_token_ids;
  options.on_text = [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  };
  // Echo the prompt as llama2.c does, so the output reads as one text.
  std::fwrite(f.prompt.data(), 1, f.prompt.size(), stdout);
  auto result = generate(model, *loaded->tokenizer.tokenizer, f.prompt, params, options);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!result) {
    std::fprintf(stderr, "error: %s\n", result.error().message.c_str());
    return 1;
  }
  const auto& r = *result;
  const double n_prompt = static_cast<double>(r.prompt_ids.size());
  const double n_gen = static_cast<double>(r.generated_ids.size());
  std::fprintf(stderr,
               "prompt: %.0f tokens in %.3f s (%.1f tokens/s); generation: %.0f tokens in %.3f s "
               "(%.1f tokens/s); finish: %s; seed: %llu; threads: %d\n",
               n_prompt, r.prefill_seconds, n_prompt / std::max(r.prefill_seconds, 1e-9), n_gen,
               r.decode_seconds, n_gen / std::max(r.decode_seconds, 1e-9),
               finish_reason_name(r.finish), static_cast<unsigned long long>(r.seed),
               pool.n_threads());
  return 0;
}

}  // namespace

Runner add_generate_command(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  f->params.max_new_tokens = 256;
  CLI::App* cmd = app.add_subcommand("generate", "Generate text from a prompt (streams to stdout)");
  cmd->add_option("-m,--model", f->model, kModelHelp)->required();
  add_hub_flags(*cmd, f->hub);
  cmd->add_option("--tokenizer", f->tokenizer,
                  "Tokenizer instead of the model's: tokenizer.json, GGUF, or llama2.c tokenizer.bin");
  cmd->add_option("-p,--prompt", f->prompt, "Prompt text (default: empty, start from BOS)");
  cmd->add_option("-n,--max-new-tokens", f->params.max_new_tokens, "Tokens to generate at most (default: the model's generation_config.json, else 256)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("-t,--temperature", f->params.temperature,
                  "Sampling temperature; 0 or 1 without other warpers = greedy (TGI semantics)")
      ->capture_default_str();
  cmd->add_flag("--do-sample", f->do_sample, "Sample even when no warper is set");
  cmd->add_option("--top-k", f->params.top_k, "Keep the k most likely tokens (0 = off)");
  cmd->add_option("--top-p", f->params.top_p, "Nucleus sampling mass (1 = off)");
  cmd->add_option("--typical-p", f->params.typical_p, "Typical sampling mass (1 = off)");
  cmd->add_option("--repetition-penalty", f->params.repetition_penalty, "1 = off");
  cmd->add_option("--frequency-penalty", f->params.frequency_penalty, "0 = off");
  cmd->add_option("--presence-penalty", f->params.presence_penalty, "0 = off");
  cmd->add_option("-s,--seed", f->seed, "Random seed (default: random; printed at the end)");
  cmd->add_option("--stop", f->stop, "Stop sequence (repeatable)");
  cmd->add_flag("--ignore-eos", f->params.ignore_eos, "Keep generating after EOS");
  cmd->add_option("--threads", f->threads, "Worker threads (default: the cores available)");
  return [f, cmd] { return run_generate(*f, *cmd); };
}

}  // namespace plimsoll::cli
