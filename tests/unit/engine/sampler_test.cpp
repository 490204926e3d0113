#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

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
