// Structured output end to end through the engine service: random-weight
// models (several weight seeds) sampling at a high temperature under a JSON
// schema, any JSON object and a regex; every answer is checked with an
// independent parser and schema check. Admission charges the grammar once.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "convert/random_model.h"
#include "engine/grammar/grammar_sources.h"
#include "sched/engine_service.h"
#include "sched/request_cost.h"
#include "schema_check.h"

namespace plimsoll::sched {
namespace {

using nlohmann::json;

ModelConfig config() {
  ModelConfig c;
  c.dim = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.ffn_dim = 128;
  c.vocab_size = 700;
  c.max_seq_len = 256;
  return c;
}

struct Finals {
  std::mutex mu;
  std::condition_variable cv;
  std::map<size_t, TokenEvent> finals;
  EventSink sink() {
    return [this](TokenEvent&& ev) {
      if (!ev.final) return;
      std::lock_guard<std::mutex> lock(mu);
      finals[ev.index] = std::move(ev);
      cv.notify_all();
    };
  }
  bool wait(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(120), [&] { return finals.size() >= n; });
  }
};

struct Engine {
  LoadedModel model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<ThreadPool> threads;
  std::unique_ptr<EngineService> service;

  explicit Engine(uint64_t weight_seed) {
    model = std::move(random_llama_in_memory(config(), DType::kF32, weight_seed)).value();
    tokenizer = std::make_unique<Tokenizer>(std::move(Tokenizer::create(*model.vocab)).value());
    threads = std::make_unique<ThreadPool>(1);
    auto pool = std::move(KvBlockPool::create(config(), 256, 16)).value();
    auto w = std::move(bind_decoder_weights(config(), model.tensors)).value();
    auto engine = std::move(BatchEngine::create(config(), w, *pool,
                                                BatchEngine::workspace_sizes(config(), 64, 16, 1, 256),
                                                threads.get())).value();
    EngineServiceConfig sc;
    sc.limits.max_total_tokens = 256;
    sc.limits.max_input_tokens = 255;
    sc.limits.max_concurrent_requests = 64;
    sc.limits.max_queued_tokens = 1 << 20;
    sc.scheduler.step_tokens = 64;
    sc.scheduler.step_seqs = 16;
    service = std::make_unique<EngineService>(sc, std::move(engine), std::move(pool), *tokenizer);
  }

  // `n` answers under `grammar`, sampled with seeds seed0.., max_new tokens each.
  std::vector<TokenEvent> answers(std::shared_ptr<const Grammar> grammar, size_t n, uint64_t seed0, int64_t max_new,
                                  bool ignore_eos = false) {
    std::vector<GenerationRequest> items;
    for (size_t i = 0; i < n; ++i) {
      GenerationRequest r;
      r.prompt_ids = tokenizer->encode("the answer as json:", true);
      r.params.max_new_tokens = max_new;
      r.params.do_sample = true;
      r.params.temperature = 1.5f;
      r.params.seed = seed0 + i;
      r.params.grammar = grammar;
      r.params.ignore_eos = ignore_eos;
      items.push_back(std::move(r));
    }
    Finals f;
    EXPECT_TRUE(service->submit(items, f.sink()).accepted());
    EXPECT_TRUE(f.wait(n));
    std::vector<TokenEvent> out;
    for (auto& [i, ev] : f.finals) out.push_back(std::move(ev));
    return out;
  }
};

const json kSchema = json::parse(R"({
  "type": "object",
  "properties": {
    "title": {"type": "string", "maxLength": 12},
    "count": {"type": "integer", "minimum": 0},
    "ratio": {"type": "number"},
    "flags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3},
    "color": {"enum": ["red", "green", "blue"]},
    "child": {"anyOf": [{"type": "null"},
                        {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
                         "additionalProperties": false}]}
  },
  "required": ["title", "count", "flags", "child"],
  "additionalProperties": false
})");

TEST(GrammarDecode, RandomWeightsAlwaysAnswerSchemaValidJson) {
  auto g = grammar_from_json_schema(kSchema, GrammarLimits{});
  ASSERT_TRUE(g.ok()) << g.error().message;
  int eos_ends = 0;
  for (uint64_t weights : {3u, 17u, 29u}) {
    Engine e(weights);
    // Budgets from barely enough to roomy: the mask steers every one to a complete value.
    for (int64_t max_new : {48, 120, 200}) {
      for (const TokenEvent& ev : e.answers(*g, 12, weights * 1000 + static_cast<uint64_t>(max_new), max_new)) {
        ASSERT_FALSE(ev.error) << ev.error->message;
        const json parsed = json::parse(ev.generated_text, nullptr, false);
        ASSERT_FALSE(parsed.is_discarded()) << "weights " << weights << " seed " << ev.seed << ": " << ev.generated_text;
        EXPECT_EQ(test::schema_violation(parsed, kSchema), "") << ev.generated_text;
        eos_ends += ev.finish_reason == FinishReason::kEosToken;
      }
    }
  }
  EXPECT_GT(eos_ends, 0);  // the end token is allowed once the value is complete
}

TEST(GrammarDecode, JsonObjectAndRegex) {
  auto any = grammar_any_json_object(GrammarLimits{});
  ASSERT_TRUE(any.ok());
  auto re = grammar_from_regex(R"((yes|no), [0-9]{1,3} [a-z]+)", GrammarLimits{});
  ASSERT_TRUE(re.ok());
  Engine e(5);
  for (const TokenEvent& ev : e.answers(*any, 16, 1, 64)) {
    const json parsed = json::parse(ev.generated_text, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << ev.generated_text;
    EXPECT_TRUE(parsed.is_object());
  }
  for (const TokenEvent& ev : e.answers(*re, 16, 1, 24)) {
    EXPECT_TRUE((*re)->matches(ev.generated_text)) << ev.generated_text;
  }
}

TEST(GrammarDecode, AFinishedGrammarEndsTheSequenceEvenWithIgnoreEos) {
  auto re = grammar_from_regex("(yes|no)", GrammarLimits{});
  ASSERT_TRUE(re.ok());
  Engine e(7);
  for (const TokenEvent& ev : e.answers(*re, 8, 1, 40, /*ignore_eos=*/true)) {
    EXPECT_TRUE(ev.generated_text == "yes" || ev.generated_text == "no") << ev.generated_text;
    EXPECT_EQ(ev.finish_reason, FinishReason::kEosToken);
    EXPECT_LT(ev.generated_tokens, 40);
  }
}

TEST(GrammarDecode, ABudgetTooShortForTheGrammarIsRefused) {
  auto g = grammar_from_json_schema(kSchema, GrammarLimits{});
  ASSERT_TRUE(g.ok());
  Engine e(3);
  GenerationRequest r;
  r.prompt_ids = e.tokenizer->encode("x", true);
  r.params.grammar = *g;
  r.params.max_new_tokens = (*g)->min_output_bytes() - 1;
  Finals f;
  const auto outcome = e.service->submit({r}, f.sink());
  ASSERT_FALSE(outcome.accepted());
  EXPECT_NE(outcome.rejection->error.message.find("too small for the grammar"), std::string::npos)
      << outcome.rejection->error.message;
}

TEST(GrammarDecode, AdmissionChargesTheGrammarOncePerSubmission) {
  auto g = grammar_from_json_schema(kSchema, GrammarLimits{});
  ASSERT_TRUE(g.ok());
  GenerationRequest r;
  r.prompt_ids = {1, 2, 3};
  r.params.max_new_tokens = 10;
  const int64_t plain = submission_cost({r, r}, CostModel{}).total();
  r.params.grammar = *g;
  const int64_t constrained = submission_cost({r, r}, CostModel{}).total();
  EXPECT_EQ(constrained - plain, (*g)->bytes());
  EXPECT_GT((*g)->bytes(), 1000);
}

TEST(GrammarDecode, AdmissionChargesNothingForAGrammarTheCacheHolds) {
  auto g = grammar_from_json_schema(kSchema, GrammarLimits{});
  ASSERT_TRUE(g.ok());
  GenerationRequest r;
  r.prompt_ids = {1, 2, 3};
  r.params.max_new_tokens = 10;
  const int64_t plain = submission_cost({r, r}, CostModel{}).total();
  r.params.grammar = *g;
  r.params.grammar_cached = true;  // the grammar cache's plan line pays for it
  EXPECT_EQ(submission_cost({r, r}, CostModel{}).total(), plain);
}

}  // namespace
}  // namespace plimsoll::sched
