// Sampling: penalties, warpers and the final choice, following Hugging Face /
// TGI's logits processors so the same parameters mean the same thing.
#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace plimsoll {
namespace {

bool in_open_unit(float v) { return v > 0.0f && v <= 1.0f; }

// probs[i] = softmax(logits[order[i]]) over the first n candidates; returns max logit.
void softmax_over(std::span<const float> logits, const std::vector<int32_t>& order, size_t n,
                  std::vector<float>& probs) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < n; ++i) max_logit = std::max(max_logit, logits[static_cast<size_t>(order[i])]);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    probs[i] = std::exp(logits[static_cast<size_t>(order[i])] - max_logit);
    sum += probs[i];
  }
  for (size_t i = 0; i < n; ++i) probs[i] = static_cast<float>(probs[i] / sum);
}

// Sorts candidates by logit, descending (ties: lower id first, for determinism).
void sort_desc(std::span<const float> logits, std::vector<int32_t>& order, size_t n) {
  std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  });
}

// top-p (HF): keep the smallest prefix of the sorted candidates whose mass reaches top_p.
size_t keep_top_p(const std::vector<float>& probs, size_t n, float top_p) {
  double cum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cum += probs[i];
    if (cum >= top_p) return i + 1;
  }
  return n;
}

// typical-p (HF TypicalLogitsWarper): rank candidates by |(-log p) - entropy|
// and keep the best-ranked ones until their mass reaches typical_p.
size_t keep_typical(SamplerScratch& s, size_t n, float typical_p) {
  double entropy = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (s.probs[i] > 0.0f) entropy -= s.probs[i] * std::log(static_cast<double>(s.probs[i]));
  }
  auto shift = [&](size_t i) {
    return s.probs[i] > 0.0f ? std::fabs(-std::log(static_cast<double>(s.probs[i])) - entropy)
                             : std::numeric_limits<double>::infinity();
  };
  s.rank.resize(n);
  std::iota(s.rank.begin(), s.rank.end(), 0);
  std::stable_sort(s.rank.begin(), s.rank.end(),
                   [&](int32_t a, int32_t b) { return shift(static_cast<size_t>(a)) < shift(static_cast<size_t>(b)); });
  double cum = 0.0;
  size_t keep = 0;
  while (keep < n) {
    cum += s.probs[static_cast<size_t>(s.rank[keep])];
    ++keep;
    if (cum >= typical_p) break;
  }
  // order[0..keep) := the kept candidates, best-ranked first
  for (size_t i = 0; i < keep; ++i) s.rank[i] = s.order[static_cast<size_t>(s.rank[i])];
  std::copy(s.rank.begin(), s.rank.begin() + static_cast<std::ptrdiff_t>(keep), s.order.begin());
  return keep;
}

}  // namespace

Status SamplingParams::validate() const {
  auto bad = [](const std::string& m) { return make_error(ErrorCode::kInvalidArgument, m); };
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) return bad("`temperature` must be a finite number >= 0");
  if (top_k < 0) return bad("`top_k` must be >= 0");
  if (!in_open_unit(top_p)) return bad("`top_p` must be > 0.0 and <= 1.0");
  if (!in_open_unit(typical_p)) return bad("`typical_p` must be > 0.0 and <= 1.0");
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty)) {
    return bad("`repetition_penalty` must be > 0");
  }
  if (!std::isfinite(frequency_penalty) || frequency_penalty < -2.0f || frequency_penalty > 2.0f) {
    return bad("`frequency_penalty` must be >= -2.0 and <= 2.0");
  }
  if (!std::isfinite(presence_penalty) || presence_penalty < -2.0f || presence_penalty > 2.0f) {
    return bad("`presence_penalty` must be >= -2.0 and <= 2.0");
  }
  if (max_new_tokens < 0) return bad("`max_new_tokens` must be >= 0");
  for (const std::string& s : stop) {
    if (s.empty()) return bad("`stop` sequences must not be empty");
  }
  return {};
}

uint64_t random_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

Sampler::Sampler(const SamplingParams& params, uint64_t seed)
    : params_(params), seed_(seed), rng_(seed) {}

void Sampler::observe_prompt(std::span<const int32_t> ids) {
  if (params_.repetition_penalty == 1.0f && params_.frequency_penalty == 0.0f &&
      params_.presence_penalty == 0.0f) {
    return;
  }
  for (int32_t id : ids) ++counts_[id];
}

void Sampler::accept(int32_t id) {
  if (params_.repetition_penalty == 1.0f && params_.frequency_penalty == 0.0f &&
      params_.presence_penalty == 0.0f) {
    return;
  }
  ++counts_[id];
}

void Sampler::apply_penalties(std::span<float> logits) const {
  for (const auto& [id, count] : counts_) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) continue;
    float& l = logits[static_cast<size_t>(id)];
    if (params_.repetition_penalty != 1.0f) {
      l = l < 0.0f ? l * params_.repetition_penalty : l / params_.repetition_penalty;
    }
    l -= params_.frequency_penalty * static_cast<float>(count);
    if (count > 0) l -= params_.presence_penalty;
  }
}

SampledToken Sampler::sample(std::span<float> logits, SamplerScratch& s) {
  apply_penalties(logits);
  const size_t vocab = logits.size();
  s.order.resize(vocab);
  s.probs.resize(vocab);
  std::iota(s.order.begin(), s.order.end(), 0);

  if (!params_.samples()) {  // greedy: argmax, first index on ties
    size_t best = 0;
    for (size_t i = 1; i < vocab; ++i) {
      if (logits[i] > logits[best]) best = i;
    }
    softmax_over(logits, s.order, vocab, s.probs);
    return {static_cast<int32_t>(best), std::log(s.probs[best])};
  }
  if (params_.temperature != 1.0f) {
    for (float& l : logits) l /= params_.temperature;
  }
  size_t n = vocab;
  sort_desc(logits, s.order, n);
  if (params_.top_k > 0) n = std::min(n, static_cast<size_t>(params_.top_k));
  softmax_over(logits, s.order, n, s.probs);
  if (params_.top_p < 1.0f) {
    n = keep_top_p(s.probs, n, params_.top_p);
    softmax_over(logits, s.order, n, s.probs);
  }
  if (params_.typical_p < 1.0f) {
    n = keep_typical(s, n, params_.typical_p);
    softmax_over(logits, s.order, n, s.probs);
  }
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double r = uniform(rng_);
  double cum = 0.0;
  size_t pick = n - 1;
  for (size_t i = 0; i < n; ++i) {
    cum += s.probs[i];
    if (r < cum) { pick = i; break; }
  }
  return {s.order[pick], std::log(s.probs[pick])};
}

}  // namespace plimsoll
