#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "kernels/kernels.h"

namespace plimsoll {
namespace {

std::vector<float> logits_of_probs(const std::vector<double>& p) {
  std::vector<float> l;
  for (double v : p) l.push_back(static_cast<float>(std::log(v)));
  return l;
}

std::map<int32_t, int> histogram(const SamplingParams& params, std::vector<float> logits, int n,
                                 uint64_t seed = 7) {
  Sampler s(params, seed);
  SamplerScratch scratch;
  std::map<int32_t, int> h;
  for (int i = 0; i < n; ++i) {
    std::vector<float> l = logits;
    ++h[s.sample(l, scratch).id];
  }
  return h;
}

TEST(Sampler, GreedyIsArgmaxFirstOnTies) {
  SamplingParams p;  // defaults: greedy (TGI: no do_sample, no warper)
  EXPECT_FALSE(p.samples());
  Sampler s(p, 1);
  SamplerScratch scratch;
  std::vector<float> l = {0.5f, 3.0f, 3.0f, -1.0f};
  const SampledToken t = s.sample(l, scratch);
  EXPECT_EQ(t.id, 1);
  const double z = std::exp(0.5) + 2 * std::exp(3.0) + std::exp(-1.0);
  EXPECT_NEAR(t.logprob, std::log(std::exp(3.0) / z), 1e-5);
}

TEST(Sampler, GreedyWithoutALogprobSkipsTheSoftmaxOnly) {
  SamplingParams p;
  Sampler s(p, 1);
  SamplerScratch scratch;
  std::vector<float> l = {0.5f, 3.0f, 3.0f, -1.0f};
  const SampledToken t = s.sample(l, scratch, 0, nullptr, /*want_logprob=*/false);
  EXPECT_EQ(t.id, 1);
  EXPECT_TRUE(std::isnan(t.logprob));
  std::vector<SampledToken> alternatives;  // alternatives asked for: the softmax runs anyway
  std::vector<float> l2 = {0.5f, 3.0f, 3.0f, -1.0f};
  const SampledToken u = s.sample(l2, scratch, 2, &alternatives, false);
  EXPECT_EQ(u.id, 1);
  EXPECT_FALSE(std::isnan(u.logprob));
  EXPECT_EQ(alternatives.size(), 2u);
}

TEST(Sampler, TemperatureZeroIsGreedy) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.do_sample = true;
  EXPECT_FALSE(p.samples());
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferent) {
  SamplingParams p;
  p.do_sample = true;
  std::vector<float> flat(100, 0.0f);
  auto draw = [&](uint64_t seed) {
    Sampler s(p, seed);
    SamplerScratch scratch;
    std::vector<int32_t> ids;
    for (int i = 0; i < 50; ++i) {
      std::vector<float> l = flat;
      ids.push_back(s.sample(l, scratch).id);
    }
    return ids;
  };
  EXPECT_EQ(draw(42), draw(42));
  EXPECT_NE(draw(42), draw(43));
}

TEST(Sampler, FrequenciesFollowTemperatureScaledSoftmax) {
  SamplingParams p;
  p.temperature = 0.5f;
  const std::vector<float> l = {1.0f, 0.0f, -1.0f};
  const int n = 20000;
  auto h = histogram(p, l, n);
  double z = 0;
  for (float v : l) z += std::exp(v / 0.5);
  for (int i = 0; i < 3; ++i) {
    const double expected = std::exp(l[static_cast<size_t>(i)] / 0.5) / z;
    EXPECT_NEAR(h[i] / static_cast<double>(n), expected, 0.015) << "token " << i;
  }
}

TEST(Sampler, TopKOneIsGreedyEvenWhenSampling) {
  SamplingParams p;
  p.do_sample = true;
  p.top_k = 1;
  auto h = histogram(p, {0.1f, 2.0f, 1.9f}, 200);
  EXPECT_EQ(h.size(), 1u);
  EXPECT_EQ(h.begin()->first, 1);
}

TEST(Sampler, TopPKeepsSmallestPrefixReachingTheMass) {
  SamplingParams p;
  p.do_sample = true;
  p.top_p = 0.6f;  // 0.5 < 0.6 <= 0.5 + 0.3: tokens 0 and 1 stay
  auto h = histogram(p, logits_of_probs({0.5, 0.3, 0.2}), 5000);
  EXPECT_EQ(h.count(2), 0u);
  EXPECT_GT(h[0], 0);
  EXPECT_GT(h[1], 0);
  EXPECT_NEAR(h[0] / 5000.0, 0.5 / 0.8, 0.03);
  p.top_p = 0.5f;  // exactly the first token's mass
  EXPECT_EQ(histogram(p, logits_of_probs({0.5, 0.3, 0.2}), 500).size(), 1u);
}

TEST(Sampler, TypicalPKeepsTokensClosestToTheEntropy) {
  // probs 0.7, 0.2, 0.1: entropy H = 0.8018; |-log p - H| = 0.445, 0.808, 1.500.
  // typical_p 0.75: token 0 (0.7) then token 1 (0.9 >= 0.75) are kept, token 2 never.
  SamplingParams p;
  p.do_sample = true;
  p.typical_p = 0.75f;
  auto h = histogram(p, logits_of_probs({0.7, 0.2, 0.1}), 5000);
  EXPECT_EQ(h.count(2), 0u);
  EXPECT_NEAR(h[0] / 5000.0, 0.7 / 0.9, 0.03);
  p.typical_p = 0.5f;  // token 0 alone reaches it
  EXPECT_EQ(histogram(p, logits_of_probs({0.7, 0.2, 0.1}), 500).size(), 1u);
}

// The oracle: softmax in double over the candidates. With top-k or top-p, the
// whole vocabulary sorted (logit descending, lower id first), cut by top-k then
// top-p (renormalizing), the draw walking the sorted candidates; with neither,
// the draw walks the vocabulary in id order. The same mt19937_64 stream.
SampledToken oracle_draw(std::vector<float> l, const SamplingParams& p, std::mt19937_64& rng) {
  for (float& v : l) v /= p.temperature;
  std::vector<int32_t> order(l.size());
  std::iota(order.begin(), order.end(), 0);
  const bool cut = p.top_k > 0 || p.top_p < 1.0f;
  if (cut) {
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
  }
  size_t n = p.top_k > 0 ? std::min(order.size(), static_cast<size_t>(p.top_k)) : order.size();
  std::vector<float> probs(n);
  auto softmax = [&] {
    float max = l[order[0]];
    for (size_t i = 0; i < n; ++i) max = std::max(max, l[order[i]]);
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += probs[i] = std::exp(l[order[i]] - max);
    for (size_t i = 0; i < n; ++i) probs[i] = static_cast<float>(probs[i] / sum);
  };
  softmax();
  if (p.top_p < 1.0f) {
    double cum = 0.0;
    size_t keep = n;
    for (size_t i = 0; i < n; ++i) {
      cum += probs[i];
      if (cum >= p.top_p) {
        keep = i + 1;
        break;
      }
    }
    n = keep;
    softmax();
  }
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  double cum = 0.0;
  size_t pick = n - 1;
  for (size_t i = 0; i < n; ++i) {
    cum += probs[i];
    if (u < cum) {
      pick = i;
      break;
    }
  }
  return {order[pick], std::log(probs[pick])};
}

// A vocabulary of 32,000 with spread logits (draws land deep in the ranking now
// and then): every draw and its logprob match the oracle, on the scalar twin of
// sum_exp and on the machine's best path. The sampler ranks lazily (partial
// sorts) and, without a cut, draws by vectorized partial sums.
TEST(Sampler, DrawsMatchAFullSoftmaxOracle) {
  const kernels::Isa saved = kernels::active_isa();
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(32000);
  for (float& v : logits) v = normal(gen);
  SamplingParams cases[4];
  cases[0].temperature = 0.8f;
  cases[1].temperature = 1.3f;
  cases[1].top_p = 0.9f;
  cases[2].do_sample = true;
  cases[2].top_k = 300;
  cases[3].temperature = 4.0f;  // nearly flat: the top-p prefix runs into the full sort
  cases[3].top_p = 0.95f;
  for (kernels::Isa isa : {kernels::Isa::kScalar, saved}) {
    ASSERT_TRUE(kernels::set_isa(isa));
    for (const SamplingParams& p : cases) {
      Sampler s(p, 11);
      SamplerScratch scratch;
      std::mt19937_64 rng(11);
      for (int i = 0; i < 100; ++i) {
        std::vector<float> l = logits;
        const SampledToken got = s.sample(l, scratch), want = oracle_draw(logits, p, rng);
        ASSERT_EQ(got.id, want.id) << kernels::isa_name(isa) << " draw " << i << " temperature " << p.temperature;
        ASSERT_NEAR(got.logprob, want.logprob, 1e-5) << kernels::isa_name(isa) << " draw " << i;
      }
    }
  }
  kernels::set_isa(saved);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegative) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  Sampler s(p, 1);
  const std::vector<int32_t> prompt = {0, 1};
  s.observe_prompt(prompt);
  SamplerScratch scratch;
  // before: token 0: 2, token 1: -2, token 2: 0.9 -> after: 1, -4, 0.9 -> greedy picks 0
  std::vector<float> l = {2.0f, -2.0f, 0.9f};
  EXPECT_EQ(s.sample(l, scratch).id, 0);
  EXPECT_FLOAT_EQ(l[0], 1.0f);
  EXPECT_FLOAT_EQ(l[1], -4.0f);
  EXPECT_FLOAT_EQ(l[2], 0.9f);
}

TEST(Sampler, FrequencyAndPresencePenaltiesCountOccurrences) {
  SamplingParams p;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  Sampler s(p, 1);
  s.accept(0);
  s.accept(0);
  s.accept(1);
  SamplerScratch scratch;
  std::vector<float> l = {2.0f, 2.0f, 0.0f};
  s.sample(l, scratch);
  EXPECT_FLOAT_EQ(l[0], 2.0f - 1.0f - 0.25f);
  EXPECT_FLOAT_EQ(l[1], 2.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(l[2], 0.0f);
}

TEST(Sampler, LogitBiasIsAddedFirst) {
  SamplingParams p;  // greedy
  p.logit_bias = LogitBias({{0, 10.0f}, {1, -100.0f}, {9, 5.0f}});  // id 9: outside this vocabulary, skipped
  Sampler s(p, 1);
  SamplerScratch scratch;
  std::vector<float> l = {1.0f, 5.0f, 2.0f};
  EXPECT_EQ(s.sample(l, scratch).id, 0);
  EXPECT_FLOAT_EQ(l[1], -95.0f);
  p.do_sample = true;  // -100 bans a token when sampling too
  for (const auto& [id, count] : histogram(p, {1.0f, 5.0f, 1.0f}, 2000)) EXPECT_NE(id, 1) << count;
}

TEST(Sampler, MinPKeepsTokensWithinTheRatioOfTheMostLikely) {
  SamplingParams p;
  p.do_sample = true;
  p.min_p = 0.3f;  // of 0.5: keeps p >= 0.15
  EXPECT_TRUE(p.samples());
  auto h = histogram(p, logits_of_probs({0.5, 0.2, 0.16, 0.14}), 4000);
  EXPECT_EQ(h.count(3), 0u);
  EXPECT_GT(h[2], 0);
  // the kept mass renormalized: 0.5 / 0.86
  EXPECT_NEAR(h[0] / 4000.0, 0.5 / 0.86, 0.03);
}

// The token's logprob and its alternatives come from one distribution, the
// one it was drawn from (TGI): greedy's full softmax, or what warpers kept.
TEST(Sampler, AlternativesShareTheTokensDistribution) {
  const std::vector<float> logits = logits_of_probs({0.1, 0.4, 0.3, 0.2});
  SamplerScratch scratch;
  std::vector<SampledToken> top;
  {
    Sampler s(SamplingParams{}, 1);
    std::vector<float> l = logits;
    const SampledToken t = s.sample(l, scratch, 2, &top);
    ASSERT_EQ(top.size(), 2u);
    EXPECT_EQ(top[0].id, 1);
    EXPECT_EQ(top[1].id, 2);
    EXPECT_FLOAT_EQ(top[0].logprob, t.logprob);
    EXPECT_NEAR(top[1].logprob, std::log(0.3), 1e-5);
  }
  for (int cut = 0; cut < 2; ++cut) {  // top-k, top-p: two tokens kept
    SamplingParams p;
    p.do_sample = true;
    if (cut == 0) p.top_k = 2;
    if (cut == 1) p.top_p = 0.65f;
    Sampler s(p, 3);
    std::vector<float> l = logits;
    const SampledToken t = s.sample(l, scratch, 4, &top);
    ASSERT_EQ(top.size(), 2u) << cut;  // only what the warper kept
    EXPECT_EQ(top[0].id, 1);
    EXPECT_EQ(top[1].id, 2);
    EXPECT_NEAR(std::exp(top[0].logprob) + std::exp(top[1].logprob), 1.0, 1e-5) << cut;  // renormalized
    const auto self = std::find_if(top.begin(), top.end(), [&](const SampledToken& a) { return a.id == t.id; });
    ASSERT_NE(self, top.end());
    EXPECT_FLOAT_EQ(self->logprob, t.logprob);
  }
  {  // typical-p ranks by entropy distance; alternatives still come most likely first
    SamplingParams p;
    p.do_sample = true;
    p.typical_p = 0.5f;
    Sampler s(p, 3);
    std::vector<float> l = logits;
    const SampledToken t = s.sample(l, scratch, 4, &top);
    ASSERT_FALSE(top.empty());
    for (size_t i = 1; i < top.size(); ++i) EXPECT_GE(top[i - 1].logprob, top[i].logprob);
    const auto self = std::find_if(top.begin(), top.end(), [&](const SampledToken& a) { return a.id == t.id; });
    ASSERT_NE(self, top.end());
    EXPECT_FLOAT_EQ(self->logprob, t.logprob);
  }
  {  // sampling with no cut: temperature's softmax over the whole vocabulary
    SamplingParams p;
    p.do_sample = true;
    p.temperature = 0.5f;
    Sampler s(p, 5);
    std::vector<float> l = logits;
    const SampledToken t = s.sample(l, scratch, 4, &top);
    ASSERT_EQ(top.size(), 4u);
    double z = 0;
    for (double q : {0.1, 0.4, 0.3, 0.2}) z += q * q;  // p^(1/T), T = 0.5
    EXPECT_NEAR(top[0].logprob, std::log(0.16 / z), 1e-5);
    const auto self = std::find_if(top.begin(), top.end(), [&](const SampledToken& a) { return a.id == t.id; });
    EXPECT_FLOAT_EQ(self->logprob, t.logprob);
  }
}

TEST(Sampler, RawLogprobsAreTheModelsSoftmax) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f};
  std::vector<int32_t> order;
  std::vector<SampledToken> top;
  const double z = std::exp(1.0) + std::exp(3.0) + std::exp(2.0);
  EXPECT_NEAR(raw_logprobs(logits, 2, 2, order, &top), 2.0 - std::log(z), 1e-5);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].id, 1);
  EXPECT_NEAR(top[0].logprob, 3.0 - std::log(z), 1e-5);
  EXPECT_EQ(top[1].id, 2);
}

TEST(SamplingParams, ValidationNamesTheParameter) {
  SamplingParams p;
  p.top_p = 1.5f;
  Status st = p.validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("top_p"), std::string::npos);
  p = SamplingParams{};
  p.temperature = -1.0f;
  EXPECT_NE(p.validate().error().message.find("temperature"), std::string::npos);
  p = SamplingParams{};
  p.repetition_penalty = 0.0f;
  EXPECT_FALSE(p.validate().ok());
  p = SamplingParams{};
  p.stop = {""};
  EXPECT_FALSE(p.validate().ok());
  EXPECT_TRUE(SamplingParams{}.validate().ok());
}

}  // namespace
}  // namespace plimsoll
