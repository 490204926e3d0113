// Sampler: turns one position's logits into the next token for one sequence,
// applying logit_bias and penalties, then temperature / top-k / top-p / min-p /
// typical-p warpers (TGI's order, min-p where transformers puts it), then greedy
// choice or a seeded draw.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/sampling_params.h"

namespace plimsoll {

struct SampledToken {
  int32_t id = 0;
  float logprob = 0.0f;  // log-probability of id under the final (warped) distribution
};

// Reusable per-thread buffers so sampling allocates nothing per token.
struct SamplerScratch {
  std::vector<int32_t> order;  // [vocab] candidate ids
  std::vector<float> probs;    // [vocab]
  std::vector<int32_t> rank;   // [vocab] typical-p ranking; alternatives of a cut distribution
};

class Sampler {
 public:
  // seed: the resolved seed (params.seed or a drawn one); see resolved_seed().
  Sampler(const SamplingParams& params, uint64_t seed);

  // Counts prompt tokens for the penalties.
  void observe_prompt(std::span<const int32_t> ids);
  // logits: [vocab], modified in place. With top_n > 0, `alternatives` gets
  // the top_n most likely tokens of the distribution the token was drawn from
  // (after bias, penalties and warpers: the token's own logprob is from the
  // same one, as TGI reports them), most likely first; fewer when a warper
  // kept fewer. want_logprob false (and top_n 0): greedy decoding returns the
  // argmax with a NaN logprob, without the softmax over the vocabulary.
  SampledToken sample(std::span<float> logits, SamplerScratch& scratch, int32_t top_n = 0,
                      std::vector<SampledToken>* alternatives = nullptr, bool want_logprob = true);
  // Records an accepted token (penalties count it from now on).
  void accept(int32_t id);

  uint64_t seed() const { return seed_; }
  const SamplingParams& params() const { return params_; }

 private:
  void apply_bias(std::span<float> logits) const;
  void apply_penalties(std::span<float> logits) const;

  SamplingParams params_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  std::unordered_map<int32_t, int32_t> counts_;  // token -> occurrences (penalties only)
};

// The model's own distribution, softmax(logits) before any bias, penalty or
// warper (vLLM's raw logprobs; prompt logprobs): returns log p(id), and with
// top_n > 0 puts the top_n tokens (most likely first, ties: lower id) in `top`.
// `order`: scratch of [vocab] ids.
float raw_logprobs(std::span<const float> logits, int32_t id, int32_t top_n, std::vector<int32_t>& order,
                   std::vector<SampledToken>* top);

// Draws a fresh random seed (std::random_device).
uint64_t random_seed();

}  // namespace plimsoll
