// MaskAhead: masks computed on the mask thread equal the engine thread's own,
// slots run out and come back, clear() drops what was never asked for.
#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "convert/random_model.h"
#include "engine/grammar/grammar_sources.h"
#include "sched/mask_ahead.h"
#include "tokenizer/tokenizer.h"

namespace plimsoll::sched {
namespace {

struct Fixture {
  std::unique_ptr<Tokenizer> tok;
  std::shared_ptr<const TokenTrie> trie;
  std::shared_ptr<const Grammar> grammar;
};

Fixture make_fixture() {
  Fixture f;
  auto tok = Tokenizer::create(synthetic_vocab(2000));
  EXPECT_TRUE(tok.ok());
  f.tok = std::make_unique<Tokenizer>(std::move(*tok));
  f.trie = std::make_shared<const TokenTrie>(TokenTrie::build(*f.tok));
  auto g = grammar_from_json_schema(nlohmann::ordered_json::parse(R"({"type":"object","properties":{
    "name":{"type":"string","maxLength":12},"n":{"type":"integer"},"xs":{"type":"array","items":{"type":"boolean"}}},
    "required":["name","n","xs"]})"), GrammarLimits{});
  EXPECT_TRUE(g.ok());
  f.grammar = *g;
  return f;
}

TEST(MaskAhead, EqualsTheEngineThreadsMaskForEverySequence) {
  Fixture f = make_fixture();
  MaskAhead ahead(f.trie, 4);
  std::vector<GrammarMatcher> seqs(4, GrammarMatcher(f.grammar));
  GrammarScratch scratch;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int32_t ends[1] = {f.tok->eos_id()};
  const int64_t max_tokens = 60;
  int64_t compared = 0;
  for (int64_t t = 0; t < max_tokens; ++t) {
    std::vector<int32_t> slots;
    for (const GrammarMatcher& m : seqs) slots.push_back(m.alive() ? ahead.start(m, max_tokens - t) : -1);
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (!seqs[i].alive()) continue;
      ASSERT_GE(slots[i], 0);
      std::vector<float> a(static_cast<size_t>(f.trie->vocab_size()));
      for (float& l : a) l = normal(rng);
      std::vector<float> b = a;
      const std::optional<bool> got = ahead.finish(slots[i], a, a, ends);
      ASSERT_TRUE(got.has_value());
      ASSERT_EQ(*got, seqs[i].mask(b, *f.trie, max_tokens - t, ends, scratch));
      ASSERT_EQ(a, b) << "sequence " << i << " step " << t;
      ++compared;
      const auto id = static_cast<int32_t>(std::max_element(a.begin(), a.end()) - a.begin());
      if (id == f.tok->eos_id()) {
        seqs[i] = GrammarMatcher();
        continue;
      }
      seqs[i].advance(id, *f.trie, scratch);
    }
    ahead.clear();
  }
  EXPECT_GT(compared, 80);
}

TEST(MaskAhead, SlotsRunOutAndClearFreesThem) {
  Fixture f = make_fixture();
  MaskAhead ahead(f.trie, 2);
  GrammarMatcher m(f.grammar);
  EXPECT_GE(ahead.start(m, 50), 0);
  EXPECT_GE(ahead.start(m, 50), 0);
  EXPECT_EQ(ahead.start(m, 50), -1);  // both slots taken: the caller masks itself
  ahead.clear();                      // never asked for (the sequences ended)
  const int32_t slot = ahead.start(m, 50);
  ASSERT_GE(slot, 0);
  std::vector<float> logits(static_cast<size_t>(f.trie->vocab_size()), 0.0f);
  const int32_t ends[1] = {f.tok->eos_id()};
  EXPECT_EQ(ahead.finish(slot, logits, logits, ends), std::optional<bool>(true));
  EXPECT_EQ(ahead.finish(slot, logits, logits, ends), std::nullopt);  // already taken
  EXPECT_EQ(logits[static_cast<size_t>(f.tok->eos_id())], -std::numeric_limits<float>::infinity());
}

}  // namespace
}  // namespace plimsoll::sched
