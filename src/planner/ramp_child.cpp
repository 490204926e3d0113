// The ramp's child: load (measure the runtime base), plan and warm up as serve
// does, then run K sequences through prefill and decode; report VmHWM.
#include "planner/ramp_child.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "memory/process_memory.h"
#include "memory/resident_model.h"

namespace plimsoll::planner {
namespace {

using Clock = std::chrono::steady_clock;

struct Seqs {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<BlockTable> tables;
};

bool make_seqs(EngineSetup& s, int64_t n, int64_t len, Seqs& out) {
  const int64_t vocab = s.model.config.vocab_size;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> ids;
    for (int64_t t = 0; t < len; ++t) ids.push_back(static_cast<int32_t>(3 + (i * 7919 + t * 104729) % (vocab - 3)));
    out.tokens.push_back(std::move(ids));
    out.tables.emplace_back();
    for (int64_t b = 0; b < blocks_for_tokens(len, s.pool->block_tokens()); ++b) {
      auto block = s.pool->allocate();
      if (!block) return false;
      out.tables.back().blocks.push_back(*block);
    }
  }
  return true;
}

// Writes positions [from, to) of every sequence, at most step_tokens tokens and
// step_seqs sequences per engine step (chunked prefill, then batched decode).
Status run_positions(EngineSetup& s, Seqs& seqs, int64_t from, int64_t to) {
  const int64_t budget = s.plan.workspace.step_tokens, max_seqs = s.plan.workspace.step_seqs;
  std::vector<int64_t> done(seqs.tokens.size(), from);
  for (;;) {
    std::vector<SeqStep> step;
    int64_t left = budget;
    for (size_t i = 0; i < seqs.tokens.size() && left > 0 && static_cast<int64_t>(step.size()) < max_seqs; ++i) {
      const int64_t n = std::min(left, to - done[i]);
      if (n <= 0) continue;
      step.push_back({std::span(seqs.tokens[i]).subspan(static_cast<size_t>(done[i]), static_cast<size_t>(n)),
                      done[i], &seqs.tables[i], true});
      done[i] += n;
      left -= n;
    }
    if (step.empty()) return {};
    PLIMSOLL_TRY(s.engine->step(step));
  }
}

Status run_batch(EngineSetup& s, int64_t batch, int64_t prompt, int64_t new_tokens, ChildReport& r) {
  // The parent asks for the plan's full capacity at the last step, from its own
  // estimate of the runtime base; this process measured its own, which can buy
  // a few sequences fewer. Within 5 % that is the same step: run what fits and
  // report the batch actually run (the parent predicts for that batch).
  const int64_t capacity = s.pool->free_blocks() / blocks_for_tokens(prompt + new_tokens, s.pool->block_tokens());
  if (batch > capacity && capacity * 100 >= batch * 95) {
    batch = capacity;
    r.batch = capacity;
  }
  Seqs seqs;
  r.fits = make_seqs(s, batch, prompt + new_tokens, seqs);
  r.kv_blocks_used = s.pool->used_blocks();
  if (!r.fits) return {};
  PLIMSOLL_TRY(run_positions(s, seqs, 0, prompt));
  for (int64_t pos = prompt; pos < prompt + new_tokens; ++pos) PLIMSOLL_TRY(run_positions(s, seqs, pos, pos + 1));
  return {};
}

}  // namespace

std::string child_report_json(const ChildReport& r) {
  nlohmann::json j = {{"batch", r.batch},
                      {"fits", r.fits},
                      {"runtime_base_bytes", r.runtime_base_bytes},
                      {"peak_resident_bytes", r.peak_resident_bytes},
                      {"kv_blocks_used", r.kv_blocks_used},
                      {"seconds", r.seconds},
                      {"error", r.error}};
  return j.dump();
}

ChildReport parse_child_report(const std::string& line) {
  ChildReport r;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    r.error = "the child printed no report";
    return r;
  }
  r.batch = j.value("batch", int64_t{0});
  r.fits = j.value("fits", false);
  r.runtime_base_bytes = j.value("runtime_base_bytes", int64_t{0});
  r.peak_resident_bytes = j.value("peak_resident_bytes", int64_t{0});
  r.kv_blocks_used = j.value("kv_blocks_used", int64_t{0});
  r.seconds = j.value("seconds", 0.0);
  r.error = j.value("error", std::string());
  return r;
}

int run_ramp_child(const ServeConfig& settings, int64_t batch, int64_t prompt, int64_t new_tokens) {
  const auto t0 = Clock::now();
  ChildReport r;
  r.batch = batch;
  auto setup = load_engine_model(settings.engine);
  Status st = setup.ok() ? Status() : Status(setup.error());
  if (st.ok()) {
    r.runtime_base_bytes = setup->runtime_base_bytes;
    st = plan_and_start_engine(settings, *setup);
  }
  if (st.ok()) st = run_batch(*setup, batch, prompt, new_tokens, r);
  if (!st.ok()) r.error = st.error().message;
  r.peak_resident_bytes = read_process_memory().peak_resident_bytes;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("%s\n", child_report_json(r).c_str());
  std::fflush(stdout);
  return st.ok() ? 0 : 1;
}

}  // namespace plimsoll::planner
