// Sampler: turns one position's logits into the next token for one sequence,
// applying penalties, then temperature / top-k / top-p / typical-p warpers
// (TGI's order), then greedy choice or a seeded draw.
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
  std::vector<int32_t> rank;   // [vocab] typical-p ranking
};

class Sampler {
 public:
  // seed: the resolved seed (params.seed or a drawn one); see resolved_seed().
  Sampler(const SamplingParams& params, uint64_t seed);

  // Counts prompt tokens for the penalties.
  void observe_prompt(std::span<const int32_t> ids);
  // logits: [vocab], modified in place.
  SampledToken sample(std::span<float> logits, SamplerScratch& scratch);
  // Records an accepted token (penalties count it from now on).
  void accept(int32_t id);

  uint64_t seed() const { return seed_; }
  const SamplingParams& params() const { return params_; }

 private:
  void apply_penalties(std::span<float> logits) const;

  SamplingParams params_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  std::unordered_map<int32_t, int32_t> counts_;  // token -> occurrences (penalties only)
};

// Draws a fresh random seed (std::random_device).
uint64_t random_seed();

}  // namespace plimsoll
