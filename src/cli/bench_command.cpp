// `plimsoll bench`: prefill and batched-decode speed of the paged engine on
// a model, inside its memory plan; --fill-pool writes every KV block and
// checks the process's peak RSS against the plan.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/kv_cache_flag.h"
#include "cli/model_reference.h"
#include "core/bytes.h"
#include "memory/process_memory.h"
#include "model/decoder_reference.h"
#include "model/decoder_weights.h"
#include "server/engine_setup.h"
#include "server/serve.h"

namespace plimsoll::cli {
namespace {

struct BenchFlags {
  EngineOptions engine;
  std::string memory_limit;
  std::vector<int64_t> batches = {1, 4, 16, 64};
  int64_t prompt_tokens = 512;
  int64_t decode_tokens = 32;
  int64_t decode_context = 16;
  bool fill_pool = false;
  int64_t naive_static_batch = 0;
};

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Seqs {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<BlockTable> tables;
};

// n sequences of `len` tokens each, with blocks for all of them; false when the pool is too small.
bool make_seqs(EngineSetup& s, int64_t n, int64_t len, Seqs& out) {
  out.tokens.assign(static_cast<size_t>(n), {});
  out.tables.assign(static_cast<size_t>(n), {});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t t = 0; t < len; ++t) {
      out.tokens[static_cast<size_t>(i)].push_back(static_cast<int32_t>(3 + (i * 7919 + t * 104729) % (s.model.config.vocab_size - 3)));
    }
    for (int64_t b = 0; b < blocks_for_tokens(len, s.pool->block_tokens()); ++b) {
      auto block = s.pool->allocate();
      if (!block) return false;
      out.tables[static_cast<size_t>(i)].blocks.push_back(*block);
    }
  }
  return true;
}

void free_seqs(EngineSetup& s, Seqs& seqs) {
  for (auto& t : seqs.tables) {
    for (int32_t b : t.blocks) s.pool->release(b);
  }
  seqs = {};
}

// Prefills positions [0, upto) of every sequence in steps of at most step_tokens tokens.
Status prefill(EngineSetup& s, Seqs& seqs, int64_t upto) {
  const int64_t budget = s.plan.workspace.step_tokens, max_seqs = s.plan.workspace.step_seqs;
  std::vector<int64_t> done(seqs.tokens.size(), 0);
  for (;;) {
    std::vector<SeqStep> plan;
    int64_t left = budget;
    for (size_t i = 0; i < seqs.tokens.size() && left > 0 && static_cast<int64_t>(plan.size()) < max_seqs; ++i) {
      const int64_t n = std::min(left, upto - done[i]);
      if (n <= 0) continue;
      plan.push_back({std::span(seqs.tokens[i]).subspan(static_cast<size_t>(done[i]), static_cast<size_t>(n)), done[i],
                      &seqs.tables[i], done[i] + n == upto});
      done[i] += n;
      left -= n;
    }
    if (plan.empty()) return {};
    PLIMSOLL_TRY(s.engine->step(plan));
  }
}

// Decodes `steps` tokens for every sequence (batch = all of them), from position `from`.
Result<double> decode(EngineSetup& s, Seqs& seqs, int64_t from, int64_t steps) {
  const auto t0 = Clock::now();
  for (int64_t k = 0; k < steps; ++k) {
    std::vector<SeqStep> plan;
    for (size_t i = 0; i < seqs.tokens.size(); ++i) {
      plan.push_back({std::span(seqs.tokens[i]).subspan(static_cast<size_t>(from + k), 1), from + k, &seqs.tables[i], true});
    }
    PLIMSOLL_TRY(s.engine->step(plan));
  }
  return static_cast<double>(steps * static_cast<int64_t>(seqs.tokens.size())) / since(t0);
}

int report_error(const Error& e) {
  spdlog::error("{}", e.message);
  return 1;
}

int run_fill_pool(EngineSetup& s) {
  const int64_t len = s.plan.max_total_tokens;
  const int64_t n = s.plan.full_sequences();
  Seqs seqs;
  if (!make_seqs(s, n, len, seqs)) return report_error({ErrorCode::kInternal, "pool smaller than planned"});
  // one shorter sequence takes the blocks that are left
  const int64_t rest_tokens = s.pool->free_blocks() * s.pool->block_tokens();
  if (rest_tokens > 0) {
    Seqs rest;
    make_seqs(s, 1, rest_tokens, rest);
    seqs.tokens.push_back(std::move(rest.tokens[0]));
    seqs.tables.push_back(std::move(rest.tables[0]));
  }
  const auto t0 = Clock::now();
  for (size_t i = 0; i < seqs.tokens.size(); ++i) {  // each sequence to its own length
    Seqs one;
    one.tokens.push_back(seqs.tokens[i]);
    one.tables.push_back(seqs.tables[i]);
    if (Status st = prefill(s, one, static_cast<int64_t>(one.tokens[0].size())); !st.ok()) return report_error(st.error());
  }
  const ProcessMemory mem = read_process_memory();
  std::printf("filled the KV pool: %lld sequences of %lld tokens and one of %lld, %lld of %lld blocks, in %.2f s\n",
              static_cast<long long>(n), static_cast<long long>(len), static_cast<long long>(rest_tokens), static_cast<long long>(s.pool->used_blocks()),
              static_cast<long long>(s.pool->n_blocks()), since(t0));
  std::printf("peak RSS %s, planned %s, budget %s: %s\n", format_bytes(mem.peak_resident_bytes).c_str(),
              format_bytes(s.plan.planned_bytes()).c_str(), format_bytes(s.budget.budget_bytes).c_str(),
              mem.peak_resident_bytes <= s.plan.planned_bytes() ? "within plan" : "OVER PLAN");
  free_seqs(s, seqs);
  return mem.peak_resident_bytes <= s.plan.planned_bytes() ? 0 : 3;
}

// What a server without a plan does with a client batch of n prompts: a
// padded static batch whose whole KV cache (n x max_total_tokens) is
// allocated up front, then run. Under a memory limit this is what gets killed.
int run_naive_static_batch(const BenchFlags& f) {
  auto model = load_model(f.engine.model_path, weights_backing(f.engine));
  if (!model) return report_error(model.error());
  auto weights = bind_decoder_weights(model->config, model->tensors);
  if (!weights) return report_error(weights.error());
  const int64_t len = f.engine.max_total_tokens > 0 ? f.engine.max_total_tokens : model->config.max_seq_len;
  const int64_t n = f.naive_static_batch;
  std::printf("naive static batch: %lld sequences x %lld tokens = %s of KV cache, allocated up front\n",
              static_cast<long long>(n), static_cast<long long>(len),
              format_bytes(n * len * kv_bytes_per_token(model->config, DType::kF32)).c_str());
  std::fflush(stdout);
  std::vector<ReferenceKvCache> caches;
  caches.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    caches.emplace_back(model->config, len);  // zero-filled: every page touched now
    if ((i + 1) % 256 == 0 || i + 1 == n) {
      std::printf("allocated %lld/%lld, RSS %s\n", static_cast<long long>(i + 1), static_cast<long long>(n),
                  format_bytes(read_process_memory().resident_bytes).c_str());
      std::fflush(stdout);
    }
  }
  DecoderReference ref(model->config, *weights);
  std::vector<float> logits(static_cast<size_t>(model->config.vocab_size));
  for (int64_t pos = 0; pos < std::min<int64_t>(len, 4); ++pos) {
    for (auto& cache : caches) ref.forward(1, pos, cache, logits.data());
  }
  std::printf("naive static batch ran; peak RSS %s\n", format_bytes(read_process_memory().peak_resident_bytes).c_str());
  return 0;
}

int run_bench(BenchFlags& f) {
  if (f.naive_static_batch > 0) return run_naive_static_batch(f);
  if (!f.memory_limit.empty()) {
    auto bytes = parse_bytes(f.memory_limit);
    if (!bytes) return report_error(bytes.error());
    f.engine.memory_limit_bytes = *bytes;
  }
  f.engine.step_seqs = std::max<int64_t>(f.engine.step_seqs, *std::max_element(f.batches.begin(), f.batches.end()));
  ServeConfig settings;
  settings.engine = f.engine;
  settings.api.threads = 0;  // no HTTP server: no transport term in the plan
  // No client requests: bench's own sequences (ids, sampler state) are far below this.
  settings.engine.request_budget_bytes = int64_t{1} << 20;
  auto setup = setup_engine(settings);
  if (!setup) return report_error(setup.error());
  EngineSetup& s = *setup;
  std::printf("%s", s.plan.table().c_str());
  std::printf("model %s: %s weights, %d threads\n", s.model.path.c_str(),
              format_bytes(s.model.tensors.total_bytes()).c_str(), s.threads->n_threads());
  if (f.fill_pool) return run_fill_pool(s);
  if (f.decode_context + f.decode_tokens > s.plan.max_total_tokens) {
    return report_error({ErrorCode::kInvalidArgument,
                         "--decode-context " + std::to_string(f.decode_context) + " + --decode-tokens " +
                             std::to_string(f.decode_tokens) + " exceeds the sequence length " +
                             std::to_string(s.plan.max_total_tokens) + " (--max-total-tokens)"});
  }
  {  // prefill
    Seqs seqs;
    const int64_t p = std::min(f.prompt_tokens, s.plan.max_total_tokens);
    if (!make_seqs(s, 1, p, seqs)) return report_error({ErrorCode::kOutOfMemory, "the pool cannot hold the prompt"});
    const auto t0 = Clock::now();
    if (Status st = prefill(s, seqs, p); !st.ok()) return report_error(st.error());
    std::printf("prefill %lld tokens: %.1f tokens/s\n", static_cast<long long>(p), static_cast<double>(p) / since(t0));
    free_seqs(s, seqs);
  }
  for (int64_t b : f.batches) {  // decode at batch b after a decode_context-token prompt
    Seqs seqs;
    const int64_t ctx = f.decode_context;
    if (!make_seqs(s, b, ctx + f.decode_tokens, seqs)) {
      std::printf("decode batch %lld: skipped, the KV pool holds fewer sequences\n", static_cast<long long>(b));
      free_seqs(s, seqs);
      continue;
    }
    if (Status st = prefill(s, seqs, ctx); !st.ok()) return report_error(st.error());
    auto rate = decode(s, seqs, ctx, f.decode_tokens);
    if (!rate) return report_error(rate.error());
    std::printf("decode batch %lld: %.1f tokens/s aggregate (%.1f per sequence)\n", static_cast<long long>(b), *rate,
                *rate / static_cast<double>(b));
    free_seqs(s, seqs);
  }
  const ProcessMemory mem = read_process_memory();
  std::printf("peak RSS %s, planned %s\n", format_bytes(mem.peak_resident_bytes).c_str(),
              format_bytes(s.plan.planned_bytes()).c_str());
  return 0;
}

}  // namespace

Runner add_bench_command(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure prefill and batched decode speed within the memory plan");
  cmd->add_option("-m,--model", f->engine.model_path, kModelHelp)->required();
  auto hub = std::make_shared<HubFlags>();
  add_hub_flags(*cmd, *hub);
  cmd->add_option("--tokenizer", f->engine.tokenizer_path, "Tokenizer instead of the model's: tokenizer.json, GGUF, or llama2.c tokenizer.bin");
  cmd->add_option("--memory-limit", f->memory_limit, "Memory limit (default: cgroup, else physical memory)");
  cmd->add_option("--memory-fraction", f->engine.memory_fraction, "Share of the limit the plan may use")->capture_default_str();
  cmd->add_option("--batch", f->batches, "Decode batch sizes")->delimiter(',')->capture_default_str();
  cmd->add_option("--prompt-tokens", f->prompt_tokens, "Prefill length")->capture_default_str();
  cmd->add_option("--decode-tokens", f->decode_tokens, "Decode steps per batch size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--decode-context", f->decode_context,
                  "Prompt tokens each decode sequence holds before its first decode step (the context "
                  "attention reads)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-batch-prefill-tokens", f->engine.step_tokens, "Tokens per step")->capture_default_str();
  cmd->add_option("--max-total-tokens", f->engine.max_total_tokens, "Sequence length (default: the context)");
  add_kv_cache_dtype_flag(*cmd, f->engine.kv_dtype, "");
  cmd->add_option("--threads", f->engine.threads, "Worker threads (default: the cores available)");
  cmd->add_option("--huge-pages", f->engine.huge_pages,
                  "Read a GGUF/llama2.c model into transparent huge pages (false: mmap the file)")
      ->capture_default_str();
  cmd->add_flag("--fill-pool", f->fill_pool, "Write every KV block, then check peak RSS against the plan");
  cmd->add_option("--naive-static-batch", f->naive_static_batch,
                  "Instead: allocate the KV cache of N padded sequences up front, as a server without a "
                  "memory plan does (the incident; expect it to be killed under a limit)");
  return [f, hub] { return resolve_model_in_place(f->engine.model_path, *hub) ? run_bench(*f) : 1; };
}

}  // namespace plimsoll::cli
