// Sampling: penalties, warpers and the final choice, following Hugging Face /
// TGI's logits processors so the same parameters mean the same thing.
#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "kernels/kernels.h"

namespace plimsoll {
namespace {

bool in_open_unit(float v) { return v > 0.0f && v <= 1.0f; }

// Candidates order[0..n) under one softmax, ranked lazily: order[0..ranked) is
// sorted by logit, descending (ties: lower id first, for determinism), and
// outranks every later candidate; probs[0..ranked) holds their probabilities.
// A draw or a top-p cut usually stops within the first few dozen candidates, so
// partial sorts that double the ranked prefix cost O(vocab) where sorting the
// whole vocabulary costs O(vocab log vocab) (2.3 ms a token at 32,000).
struct Ranking {
  std::span<const float> logits;
  SamplerScratch& s;
  size_t n = 0;       // candidates
  size_t ranked = 0;  // sorted prefix, probabilities known
  float max_logit = 0.0f;
  double sum = 0.0;   // sum of exp(logit - max_logit) over the candidates

  bool before(int32_t a, int32_t b) const {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  }
  // Ranks at least order[0..m) (m <= n).
  void rank_to(size_t m) {
    if (m <= ranked) return;
    m = std::min(n, std::max({m, 2 * ranked, size_t{64}}));
    if (m > n / 8) m = n;  // deep into a flat distribution: one introsort beats more heap passes
    const auto first = s.order.begin() + static_cast<std::ptrdiff_t>(ranked);
    const auto mid = s.order.begin() + static_cast<std::ptrdiff_t>(m), last = s.order.begin() + static_cast<std::ptrdiff_t>(n);
    auto cmp = [&](int32_t a, int32_t b) { return before(a, b); };
    if (mid == last) {
      std::sort(first, last, cmp);
    } else {
      std::partial_sort(first, mid, last, cmp);
    }
    for (size_t i = ranked; i < m; ++i) {
      s.probs[i] = static_cast<float>(std::exp(logits[static_cast<size_t>(s.order[i])] - max_logit) / sum);
    }
    ranked = m;
  }
  float prob(size_t i) {
    rank_to(i + 1);
    return s.probs[i];
  }
  // Keeps the first m ranked candidates and renormalizes over them (a softmax
  // over order[0..m), as the warpers that cut the candidates do).
  void keep(size_t m) {
    rank_to(m);
    n = ranked = m;
    max_logit = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < n; ++i) max_logit = std::max(max_logit, logits[static_cast<size_t>(s.order[i])]);
    sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
      s.probs[i] = std::exp(logits[static_cast<size_t>(s.order[i])] - max_logit);
      sum += s.probs[i];
    }
    for (size_t i = 0; i < n; ++i) s.probs[i] = static_cast<float>(s.probs[i] / sum);
  }
};

// A draw from softmax(logits) (max_logit, sum: its shift and denominator)
// walking the vocabulary in id order, 256 ids a vectorized sum at a time: no
// ranking at all, for a distribution no warper has cut. Returns the id whose
// cumulative mass first exceeds u (the argmax if rounding leaves u beyond the end).
int32_t draw_in_id_order(std::span<const float> logits, float max_logit, double sum, double u) {
  constexpr size_t kSpan = 256;
  double cum = 0.0;
  for (size_t c0 = 0; c0 < logits.size(); c0 += kSpan) {
    const size_t c1 = std::min(logits.size(), c0 + kSpan);
    const double mass = kernels::sum_exp(logits.data() + c0, static_cast<int64_t>(c1 - c0), max_logit) / sum;
    if (u >= cum + mass) {
      cum += mass;
      continue;
    }
    for (size_t i = c0; i < c1; ++i) {
      cum += std::exp(logits[i] - max_logit) / sum;
      if (u < cum) return static_cast<int32_t>(i);
    }
  }
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// top-p (HF): the smallest prefix of the ranked candidates whose mass reaches top_p.
size_t top_p_prefix(Ranking& r, float top_p) {
  double cum = 0.0;
  for (size_t i = 0; i < r.n; ++i) {
    cum += r.prob(i);
    if (cum >= top_p) return i + 1;
  }
  return r.n;
}

// min-p (HF MinPLogitsWarper): the ranked candidates whose probability is at
// least min_p x the most likely one's (at least one).
size_t min_p_prefix(Ranking& r, float min_p) {
  const float floor = min_p * r.prob(0);
  size_t keep = 1;
  while (keep < r.n && r.prob(keep) >= floor) ++keep;
  return keep;
}

// The top_n ids of logits (ties: lower id first) with logit - log_z, into out.
void top_of_logits(std::span<const float> logits, float log_z, int32_t top_n, std::vector<int32_t>& order,
                   std::vector<SampledToken>* out) {
  const size_t k = std::min(static_cast<size_t>(top_n), logits.size());
  order.resize(logits.size());
  std::iota(order.begin(), order.end(), 0);
  auto before = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), before);
  for (size_t i = 0; i < k; ++i) out->push_back({order[i], logits[static_cast<size_t>(order[i])] - log_z});
}

// The top_n of a cut distribution: candidates order[0..n) with probs[0..n),
// not necessarily by probability (typical-p ranks by entropy distance).
void top_of_candidates(Ranking& r, int32_t top_n, std::vector<SampledToken>* out) {
  SamplerScratch& s = r.s;
  const size_t k = std::min(static_cast<size_t>(top_n), r.n);
  r.rank_to(r.n);
  s.rank.resize(r.n);
  std::iota(s.rank.begin(), s.rank.end(), 0);
  std::partial_sort(s.rank.begin(), s.rank.begin() + static_cast<std::ptrdiff_t>(k), s.rank.end(), [&](int32_t a, int32_t b) {
    const float pa = s.probs[static_cast<size_t>(a)], pb = s.probs[static_cast<size_t>(b)];
    return pa > pb || (pa == pb && s.order[static_cast<size_t>(a)] < s.order[static_cast<size_t>(b)]);
  });
  for (size_t i = 0; i < k; ++i) {
    const size_t c = static_cast<size_t>(s.rank[i]);
    out->push_back({s.order[c], std::log(s.probs[c])});
  }
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
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return bad("`min_p` must be >= 0.0 and <= 1.0");
  for (const LogitBias::Entry& e : logit_bias.entries()) {
    if (e.first < 0 || !std::isfinite(e.second)) return bad("`logit_bias` holds a negative token id or a non-finite bias");
  }
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty)) {
    return bad("`repetition_penalty` must be a finite number > 0 (as a float: at most ~3.4e38)");
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

float raw_logprobs(std::span<const float> logits, int32_t id, int32_t top_n, std::vector<int32_t>& order,
                   std::vector<SampledToken>* top) {
  if (top) top->clear();
  if (logits.empty()) return 0.0f;
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  const float log_z = max_logit + static_cast<float>(std::log(
                                      kernels::sum_exp(logits.data(), static_cast<int64_t>(logits.size()), max_logit)));
  if (top && top_n > 0) top_of_logits(logits, log_z, top_n, order, top);
  const bool known = id >= 0 && static_cast<size_t>(id) < logits.size();
  return known ? logits[static_cast<size_t>(id)] - log_z : -std::numeric_limits<float>::infinity();
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

void Sampler::apply_bias(std::span<float> logits) const {
  for (const auto& [id, bias] : params_.logit_bias.entries()) {
    if (id >= 0 && static_cast<size_t>(id) < logits.size()) logits[static_cast<size_t>(id)] += bias;
  }
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

SampledToken Sampler::sample(std::span<float> logits, SamplerScratch& s, int32_t top_n,
                             std::vector<SampledToken>* alternatives, bool want_logprob) {
  if (alternatives) alternatives->clear();
  if (!alternatives) top_n = 0;
  apply_bias(logits);
  apply_penalties(logits);
  const size_t vocab = logits.size();
  if (!params_.samples()) {  // greedy: argmax, first index on ties; logprob from the full softmax
    const size_t best = static_cast<size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (!want_logprob && top_n == 0) return {static_cast<int32_t>(best), std::numeric_limits<float>::quiet_NaN()};
    const double sum = kernels::sum_exp(logits.data(), static_cast<int64_t>(vocab), logits[best]);
    const float log_z = logits[best] + static_cast<float>(std::log(sum));
    if (top_n > 0) top_of_logits(logits, log_z, top_n, s.order, alternatives);
    return {static_cast<int32_t>(best), logits[best] - log_z};
  }
  if (params_.temperature != 1.0f) {
    for (float& l : logits) l /= params_.temperature;
  }
  s.order.resize(vocab);
  s.probs.resize(vocab);
  std::iota(s.order.begin(), s.order.end(), 0);
  Ranking r{logits, s, vocab};
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < vocab) {
    r.keep(static_cast<size_t>(params_.top_k));
  } else {
    r.max_logit = *std::max_element(logits.begin(), logits.end());
    r.sum = kernels::sum_exp(logits.data(), static_cast<int64_t>(vocab), r.max_logit);
  }
  if (params_.top_p < 1.0f) r.keep(top_p_prefix(r, params_.top_p));
  if (params_.min_p > 0.0f) r.keep(min_p_prefix(r, params_.min_p));
  if (params_.typical_p < 1.0f) {  // ranks every candidate by its distance to the entropy
    r.rank_to(r.n);
    r.keep(keep_typical(s, r.n, params_.typical_p));
  }
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double u = uniform(rng_);
  if (r.n == vocab && r.ranked == 0) {  // no warper cut or ranked the candidates
    const int32_t id = draw_in_id_order(logits, r.max_logit, r.sum, u);
    const float log_z = r.max_logit + static_cast<float>(std::log(r.sum));
    if (top_n > 0) top_of_logits(logits, log_z, top_n, s.rank, alternatives);
    return {id, logits[static_cast<size_t>(id)] - log_z};
  }
  double cum = 0.0;
  size_t pick = r.n - 1;
  for (size_t i = 0; i < r.n; ++i) {
    cum += r.prob(i);
    if (u < cum) {
      pick = i;
      break;
    }
  }
  const SampledToken token{s.order[pick], std::log(r.prob(pick))};
  if (top_n > 0) top_of_candidates(r, top_n, alternatives);
  return token;
}

}  // namespace plimsoll
