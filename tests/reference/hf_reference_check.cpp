// Checks Plimsoll against hf_reference.py's expectations: loads each tiny HF
// checkpoint, compares logits and greedy tokens of the reference and batched forwards.
// Usage: hf_reference_check DIR   (DIR holds gpt2/, bloom/, llama/, qwen2/, llama3/,
// mistral/, qwen3/, smollm2/, phi3/, gemma2/, gemma3/, gemma3_types/, mistral_window/
// and the Llama family's and Gemma's <arch>.gguf)
// Tolerance: |logit - expected| <= kTolerance. The expectations are computed in
// float64 on the weights as stored; Plimsoll computes in f32, so the two differ
// by f32 rounding (~6e-8 relative per operation), which through two layers of
// width <= 192 and logits of magnitude <= ~10 stays below ~1e-5 (measured: see
// the printed maxima). 1e-4 leaves that 10x headroom, while any formula error
// (RoPE layout, ALiBi slope, a missing bias or transpose) moves logits by > 1e-2.
// The batched forward runs twice: on the f32-exact AVX-512 path (kTolerance) and
// on the best path; under AMX its f32 matmuls of 32+ tokens use bf16 hi/lo splits
// (2^-15 of sum |w*x| per dot, kernels.h), held to kSplitTolerance.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/batch_engine.h"
#include "kernels/kernels.h"
#include "formats/model_file.h"
#include "model/decoder_reference.h"
#include "model/decoder_weights.h"

namespace plimsoll {
namespace {

constexpr double kTolerance = 1e-4;
constexpr double kSplitTolerance = 5e-4;
constexpr int64_t kBlockTokens = 4;
constexpr int64_t kStepTokens = 8;  // small: prompts are prefilled in chunks

struct Case {
  std::vector<int32_t> prompt, greedy;
  std::vector<std::vector<float>> step_logits;
};

struct Outcome {
  double max_diff = 0.0;
  bool tokens_equal = true;
};

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

double max_abs_diff(std::span<const float> a, const std::vector<float>& b) {
  double m = a.size() == b.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

std::vector<Case> read_cases(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<Case> out;
  for (const auto& p : j.at("prompts")) {
    out.push_back({p.at("prompt").get<std::vector<int32_t>>(), p.at("greedy").get<std::vector<int32_t>>(),
                   p.at("step_logits").get<std::vector<std::vector<float>>>()});
  }
  return out;
}

// The reference forward, token by token; greedy from its own logits.
Outcome run_reference(const LoadedModel& m, const DecoderWeights& w, const Case& c) {
  DecoderReference ref(m.config, w);
  ReferenceKvCache cache(m.config, static_cast<int64_t>(c.prompt.size() + c.greedy.size()));
  std::vector<float> logits(static_cast<size_t>(m.config.vocab_size));
  Outcome o;
  int64_t pos = 0;
  for (int32_t t : c.prompt) ref.forward(t, pos++, cache, logits.data());
  for (size_t i = 0; i < c.greedy.size(); ++i) {
    o.max_diff = std::max(o.max_diff, max_abs_diff(logits, c.step_logits[i]));
    const int32_t next = argmax(logits);
    o.tokens_equal &= next == c.greedy[i];
    ref.forward(next, pos++, cache, logits.data());
  }
  return o;
}

struct Seq {
  std::vector<int32_t> tokens;
  int64_t done = 0;
  size_t step = 0;  // greedy tokens produced
  BlockTable table;
};

// All prompts in one batch: chunked prefill under kStepTokens, then decode steps.
Result<Outcome> run_batched(const LoadedModel& m, const DecoderWeights& w, const std::vector<Case>& cases) {
  const ModelConfig& c = m.config;
  const int64_t max_len = 64;
  PLIMSOLL_ASSIGN(auto pool, KvBlockPool::create(c, 4 * max_len / kBlockTokens, kBlockTokens));
  ThreadPool threads(2);
  PLIMSOLL_ASSIGN(auto engine, BatchEngine::create(c, w, *pool, BatchEngine::workspace_sizes(c, kStepTokens, 4, 2, max_len), &threads));
  std::vector<Seq> seqs(cases.size());
  for (size_t s = 0; s < cases.size(); ++s) {
    seqs[s].tokens = cases[s].prompt;
    for (int64_t b = 0; b < max_len / kBlockTokens; ++b) seqs[s].table.blocks.push_back(*pool->allocate());
  }
  Outcome o;
  for (int guard = 0; guard < 1000; ++guard) {
    std::vector<SeqStep> plan;
    std::vector<size_t> owners;
    int64_t budget = kStepTokens;
    for (size_t s = 0; s < seqs.size() && budget > 0; ++s) {
      Seq& q = seqs[s];
      const int64_t pending = static_cast<int64_t>(q.tokens.size()) - q.done;
      if (pending <= 0 || q.step >= cases[s].greedy.size()) continue;
      const int64_t n = std::min(budget, pending);
      plan.push_back({std::span(q.tokens).subspan(static_cast<size_t>(q.done), static_cast<size_t>(n)), q.done,
                      &q.table, n == pending});
      owners.push_back(s);
      budget -= n;
    }
    if (plan.empty()) break;
    PLIMSOLL_ASSIGN(std::span<const float> logits, engine->step(plan));
    size_t row = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
      Seq& q = seqs[owners[i]];
      q.done += static_cast<int64_t>(plan[i].tokens.size());
      if (!plan[i].want_logits) continue;
      const auto r = logits.subspan(row++ * static_cast<size_t>(c.vocab_size), static_cast<size_t>(c.vocab_size));
      const Case& k = cases[owners[i]];
      o.max_diff = std::max(o.max_diff, max_abs_diff(r, k.step_logits[q.step]));
      const int32_t next = argmax(r);
      o.tokens_equal &= next == k.greedy[q.step];
      q.tokens.push_back(next);
      ++q.step;
    }
  }
  for (size_t s = 0; s < seqs.size(); ++s) o.tokens_equal &= seqs[s].step == cases[s].greedy.size();
  return o;
}

bool check_settings(const LoadedModel& m) {
  return m.generation_defaults && m.generation_defaults->eos_token_ids == std::vector<int32_t>{2, 3} &&
         m.tokenizer_settings && m.tokenizer_settings->bos_token == "<s>" &&
         m.tokenizer_settings->add_bos_token == true;
}

// `path`: a Hugging Face folder (its settings files are checked too) or a
// GGUF file; `dir`: the folder holding expected.json.
bool check_model(const std::string& path, const std::string& dir) {
  const bool folder = std::filesystem::is_directory(path);
  const std::string name = std::filesystem::path(path).filename().string();
  auto m = load_model(path);
  if (!m) return std::fprintf(stderr, "%s: load failed: %s\n", name.c_str(), m.error().message.c_str()), false;
  auto w = bind_decoder_weights(m->config, m->tensors);
  if (!w) return std::fprintf(stderr, "%s: bind failed: %s\n", name.c_str(), w.error().message.c_str()), false;
  const std::vector<Case> cases = read_cases(dir + "/expected.json");
  Outcome ref;
  for (const Case& c : cases) {
    const Outcome o = run_reference(*m, *w, c);
    ref.max_diff = std::max(ref.max_diff, o.max_diff);
    ref.tokens_equal &= o.tokens_equal;
  }
  const kernels::Isa best = kernels::active_isa();
  const bool settings = !folder || check_settings(*m);
  bool ok = ref.max_diff <= kTolerance && ref.tokens_equal && settings;
  std::printf("%-12s reference: max |dlogit| %.3g, greedy %s; settings %s\n", name.c_str(), ref.max_diff,
              ref.tokens_equal ? "equal" : "DIFFER", folder ? (settings ? "ok" : "WRONG") : "(gguf)");
  for (kernels::Isa isa : {kernels::Isa::kAvx512, best}) {
    if (!kernels::set_isa(isa)) continue;
    const double tolerance = isa == kernels::Isa::kAmx && kernels::amx_bf16_usable() ? kSplitTolerance : kTolerance;
    auto batched = run_batched(*m, *w, cases);
    kernels::set_isa(best);
    if (!batched) return std::fprintf(stderr, "%s: batched: %s\n", name.c_str(), batched.error().message.c_str()), false;
    const bool good = batched->max_diff <= tolerance && batched->tokens_equal;
    std::printf("%-12s batched (%s): max |dlogit| %.3g (tolerance %.0e), greedy %s\n", name.c_str(),
                kernels::isa_name(isa), batched->max_diff, tolerance, batched->tokens_equal ? "equal" : "DIFFER");
    ok &= good;
  }
  std::printf("%-12s %s\n", name.c_str(), ok ? "ok" : "FAIL");
  return ok;
}

}  // namespace
}  // namespace plimsoll

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hf_reference_check DIR\n");
    return 2;
  }
  int failed = 0, passed = 0;
  for (const char* arch : {"gpt2", "bloom", "llama", "qwen2", "llama3", "mistral", "qwen3", "smollm2", "phi3",
                           "gemma2", "gemma3", "gemma3_types", "mistral_window"}) {
    const std::string dir = std::string(argv[1]) + "/" + arch;
    (plimsoll::check_model(dir, dir) ? passed : failed)++;
    // The Llama family and Gemma also as llama.cpp's converter writes them (write_llama_gguf, write_gemma_gguf).
    if (std::filesystem::exists(dir + ".gguf")) (plimsoll::check_model(dir + ".gguf", dir) ? passed : failed)++;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
