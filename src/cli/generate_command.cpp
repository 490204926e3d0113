// `plimsoll generate`: one prompt through the same engine service as `serve`
// (batched engine, scheduler, sampler, detokenizer and stop matching), planned
// for one sequence; the text streams to stdout, speed figures go to stderr.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/kv_cache_flag.h"
#include "cli/model_reference.h"
#include "api/event_queue.h"
#include "engine/finish_reason.h"
#include "engine/sampling_params.h"
#include "memory/memory_plan.h"
#include "sched/engine_service.h"
#include "server/service_setup.h"

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
  DType kv_dtype = DType::kF32;  // as llama2.c computes, so greedy output matches it byte for byte
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

using Clock = std::chrono::steady_clock;

// When the engine thread pushed the first event (the first generated token:
// no prompt details are asked for) and the last one; the queue's listener runs
// on the pushing thread, after each push.
struct PushTimes {
  std::mutex mu;
  std::optional<Clock::time_point> first;
  Clock::time_point last;
};

int fail(const std::string& message) {
  spdlog::error("{}", message);
  return 1;
}

// The engine options for one sequence at a time, no prefix cache (nothing to share).
ServeConfig one_sequence_settings(const GenerateFlags& f) {
  ServeConfig settings;
  settings.engine.model_path = f.model;
  settings.engine.tokenizer_path = f.tokenizer;
  settings.engine.threads = f.threads;
  settings.engine.kv_dtype = f.kv_dtype;
  settings.engine.step_seqs = 1;
  settings.engine.max_concurrent_requests = 1;
  settings.engine.prefix_caching = false;
  settings.api.threads = 0;  // no HTTP server: no transport term in the plan
  return settings;
}

int run_generate(GenerateFlags& f, const CLI::App& cmd) {
  if (!resolve_model_in_place(f.model, f.hub)) return 1;
  ServeConfig settings = one_sequence_settings(f);
  auto setup = load_engine_model(settings.engine);
  if (!setup) return fail(setup.error().message);
  EngineSetup& s = *setup;
  sched::GenerationRequest request;
  request.params = sampling_for(f, cmd, s.model);
  if (f.seed >= 0) request.params.seed = static_cast<uint64_t>(f.seed);
  request.prompt_ids = s.tokenizer.tokenizer->encode(f.prompt, /*add_bos=*/true);
  request.streamed = true;
  // The plan holds exactly this request: its prompt and new tokens, in whole KV blocks.
  const int64_t total = static_cast<int64_t>(request.prompt_ids.size()) + request.params.max_new_tokens;
  const int64_t context = s.model.config.max_seq_len;
  if (context > 0 && total > context) {
    return fail("the prompt (" + std::to_string(request.prompt_ids.size()) + " tokens) plus --max-new-tokens (" +
                std::to_string(request.params.max_new_tokens) + ") exceeds the model's context of " +
                std::to_string(context) + " tokens");
  }
  const int64_t block = settings.engine.block_tokens;
  settings.engine.max_total_tokens = std::max<int64_t>(total, 2);
  settings.engine.max_batch_memory_bytes = (settings.engine.max_total_tokens + block - 1) / block * block *
                                           kv_bytes_per_token(s.model.config, f.kv_dtype);
  if (s.model.generation_defaults) settings.api.generation_defaults = *s.model.generation_defaults;
  if (Status st = plan_and_start_engine(settings, s); !st.ok()) return fail(st.error().message);
  auto limits = derive_limits(settings, s);
  if (!limits) return fail(limits.error().message);
  const int threads = s.threads->n_threads();
  sched::EngineService service(engine_service_config(settings, s, *limits), std::move(s.engine), std::move(s.pool),
                               *s.tokenizer.tokenizer);
  auto events = api::EventQueue::create(1);
  auto times = std::make_shared<PushTimes>();
  events->set_listener([times] {
    std::lock_guard<std::mutex> lock(times->mu);
    times->last = Clock::now();
    if (!times->first) times->first = times->last;
  });
  const auto t0 = Clock::now();
  sched::SubmitResult submitted = service.submit({std::move(request)}, events->sink());
  if (!submitted.accepted()) return fail(submitted.rejection->error.message);
  // Echo the prompt as llama2.c does, so the output reads as one text.
  std::fwrite(f.prompt.data(), 1, f.prompt.size(), stdout);
  std::fflush(stdout);
  sched::TokenEvent e;
  while (!events->finished()) {
    std::optional<sched::TokenEvent> next = events->pop(std::chrono::milliseconds(100));
    if (!next) continue;
    e = std::move(*next);
    std::fwrite(e.text.data(), 1, e.text.size(), stdout);
    std::fflush(stdout);
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
  service.shutdown(0);
  if (e.error) return fail(e.error->message);
  std::optional<Clock::time_point> first;
  Clock::time_point t1;
  {
    std::lock_guard<std::mutex> lock(times->mu);
    first = times->first;
    t1 = times->last;
  }
  const double prefill_s = std::chrono::duration<double>(first.value_or(t1) - t0).count();
  const double decode_s = std::chrono::duration<double>(t1 - first.value_or(t1)).count();
  const double n_prompt = static_cast<double>(e.input_tokens);
  const double n_decoded = static_cast<double>(std::max<int64_t>(e.generated_tokens - 1, 0));  // after the first
  spdlog::info("prompt: {:.0f} tokens in {:.3f} s to the first token ({:.1f} tokens/s); generation: {} tokens, "
               "{:.0f} more in {:.3f} s ({:.1f} tokens/s); finish: {}; seed: {}; threads: {}",
               n_prompt, prefill_s, n_prompt / std::max(prefill_s, 1e-9), e.generated_tokens, n_decoded, decode_s,
               n_decoded / std::max(decode_s, 1e-9), finish_reason_name(e.finish_reason), e.seed, threads);
  return 0;
}

}  // namespace

Runner add_generate_command(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  f->params.max_new_tokens = 256;
  CLI::App* cmd = app.add_subcommand("generate", "Generate text from a prompt (streams to stdout) on the serving engine");
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
  add_kv_cache_dtype_flag(*cmd, f->kv_dtype, "");
  return [f, cmd] { return run_generate(*f, *cmd); };
}

}  // namespace plimsoll::cli
