// The output processor alone, on hand-made logits over the synthetic
// vocabulary (no model, no scheduler): stop sequences across token
// boundaries, EOS and extra EOS ids, a grammar-masked sequence ending with
// EOS, and the events it builds (alternatives, the prompt's records, the
// final figures, rows mapped to the plan, faults returned as values).
#include "sched/output_processor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string_view>

#include "convert/random_model.h"
#include "engine/grammar/grammar_sources.h"
#include "test_paths.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace plimsoll::sched {
namespace {

constexpr int64_t kVocab = 400;

struct OutputProcessorTest : ::testing::Test {
  Tokenizer tok = std::move(Tokenizer::create(synthetic_vocab(kVocab))).value();
  Submission sub;

  OutputProcessorTest() { sub.ticket = 7; }

  int32_t id_of(std::string_view piece) const {
    for (int32_t id = 0; id < kVocab; ++id) {
      if (tok.token(id) == piece) return id;
    }
    ADD_FAILURE() << "no piece " << piece;
    return 0;
  }

  // Logits [kVocab] whose greedy pick is `id`.
  static std::vector<float> pick(int32_t id) {
    std::vector<float> logits(kVocab, 0.0f);
    logits[static_cast<size_t>(id)] = 10.0f;
    return logits;
  }

  // A sequence after a BOS prompt, greedy unless the request says otherwise.
  std::unique_ptr<Sequence> sequence(GenerationRequest r) {
    if (r.prompt_ids.empty()) r.prompt_ids = {tok.bos_id()};
    return std::make_unique<Sequence>(&sub, 0, std::move(r), tok);
  }

  static GenerationRequest request(int64_t max_new) {
    GenerationRequest r;
    r.params.max_new_tokens = max_new;
    return r;
  }
};

TEST_F(OutputProcessorTest, AStopSequenceAcrossTokensEndsAtTheTokenThatCompletesIt) {
  OutputProcessor out(tok, {});
  GenerationRequest r = request(10);
  r.params.stop = std::vector<std::string>{"at"};  // "ta" + "te": the stop spans the boundary
  auto seq = sequence(std::move(r));
  SequenceOutput first = out.process_one(*seq, pick(id_of("ta")));
  ASSERT_FALSE(first.fault);
  EXPECT_FALSE(first.event.final);
  EXPECT_EQ(first.event.text, "ta");
  SequenceOutput second = out.process_one(*seq, pick(id_of("te")));
  ASSERT_FALSE(second.fault);
  ASSERT_TRUE(second.event.final);
  EXPECT_EQ(second.event.finish_reason, FinishReason::kStopSequence);
  EXPECT_EQ(second.event.text, "te");
  EXPECT_EQ(second.event.generated_text, "tate");  // the stop sequence is kept (TGI)
  EXPECT_EQ(second.event.stop_offset, 1);
  EXPECT_EQ(second.event.generated_tokens, 2);
  EXPECT_EQ(seq->finish, FinishReason::kStopSequence);
}

// Moved from engine_service_test: where a matched stop sequence begins in generated_text.
TEST_F(OutputProcessorTest, StopOffsetMarksWhereTheStopSequenceBegins) {
  OutputProcessor out(tok, {});
  GenerationRequest r = request(10);
  r.params.stop = std::vector<std::string>{"tea"};
  auto seq = sequence(std::move(r));
  TokenEvent last;
  for (const char* piece : {"e", "at", "e", "a", "t"}) {
    SequenceOutput o = out.process_one(*seq, pick(id_of(piece)));
    ASSERT_FALSE(o.fault);
    last = std::move(o.event);
    if (last.final) break;
  }
  ASSERT_TRUE(last.final);
  EXPECT_EQ(last.finish_reason, FinishReason::kStopSequence);
  EXPECT_EQ(last.generated_text, "eatea");
  EXPECT_EQ(last.stop_offset, 2);
  EXPECT_EQ(last.generated_text.substr(static_cast<size_t>(last.stop_offset)), "tea");
}

TEST_F(OutputProcessorTest, EosAndExtraEosIdsEndUnlessIgnored) {
  const int32_t extra = id_of("tt");
  OutputProcessor out(tok, {extra});
  EXPECT_TRUE(out.is_end_id(tok.eos_id()));
  EXPECT_TRUE(out.is_end_id(extra));
  EXPECT_FALSE(out.is_end_id(id_of("ta")));
  for (const int32_t end : {tok.eos_id(), extra}) {
    auto seq = sequence(request(10));
    ASSERT_FALSE(out.process_one(*seq, pick(id_of("ea"))).event.final);
    SequenceOutput o = out.process_one(*seq, pick(end));
    ASSERT_TRUE(o.event.final);
    EXPECT_EQ(o.event.finish_reason, FinishReason::kEosToken);
    EXPECT_EQ(o.event.token.id, end);
    EXPECT_EQ(o.event.text, "");  // an end id adds no text
    EXPECT_EQ(o.event.generated_text, "ea");
    EXPECT_EQ(o.event.generated_tokens, 2);
  }
  GenerationRequest ignoring = request(2);
  ignoring.params.ignore_eos = true;
  auto seq = sequence(std::move(ignoring));
  EXPECT_FALSE(out.process_one(*seq, pick(tok.eos_id())).event.final);
  SequenceOutput o = out.process_one(*seq, pick(extra));
  ASSERT_TRUE(o.event.final);
  EXPECT_EQ(o.event.finish_reason, FinishReason::kLength);
}

// Under a grammar the mask decides: flat logits, and the sequence spells the
// only text the grammar allows, then ends with EOS — even with ignore_eos.
TEST_F(OutputProcessorTest, AGrammarMaskedSequenceEndsWithEosWhenItsGrammarIsDone) {
  auto re = grammar_from_regex("eat", GrammarLimits{});
  ASSERT_TRUE(re.ok());
  OutputProcessor out(tok, {});
  GenerationRequest r = request(8);
  r.params.grammar = *re;
  r.params.ignore_eos = true;
  auto seq = sequence(std::move(r));
  const std::vector<float> flat(kVocab, 0.0f);
  TokenEvent last;
  for (int i = 0; i < 8 && !last.final; ++i) {
    SequenceOutput o = out.process_one(*seq, flat);
    ASSERT_FALSE(o.fault);
    last = std::move(o.event);
  }
  ASSERT_TRUE(last.final);
  EXPECT_EQ(last.finish_reason, FinishReason::kEosToken);
  EXPECT_NE(last.token.id, tok.eos_id());  // ended as "eat" was finished: no step spent on the forced EOS
  EXPECT_EQ(last.generated_text, "eat");
}

// An output the grammar accepts when max_new_tokens is reached ends as EOS
// would (OpenAI "stop"): the value is whole, though it could have gone on.
TEST_F(OutputProcessorTest, AGrammarCompleteAtTheLengthEndsAsEos) {
  auto re = grammar_from_regex("e(at)*", GrammarLimits{});
  ASSERT_TRUE(re.ok());
  OutputProcessor out(tok, {});
  GenerationRequest r = request(1);
  r.params.grammar = *re;
  auto seq = sequence(std::move(r));
  SequenceOutput o = out.process_one(*seq, pick(id_of("e")));
  ASSERT_FALSE(o.fault);
  ASSERT_TRUE(o.event.final);
  EXPECT_EQ(o.event.finish_reason, FinishReason::kEosToken);
  EXPECT_EQ(o.event.generated_text, "e");
}

TEST_F(OutputProcessorTest, LengthEndsWithTheFinalFigures) {
  OutputProcessor out(tok, {});
  GenerationRequest r = request(2);
  r.params.seed = 42;
  r.prompt_ids = {tok.bos_id(), id_of("ta")};
  auto seq = sequence(std::move(r));
  EXPECT_FALSE(out.process_one(*seq, pick(id_of("e"))).event.final);
  SequenceOutput o = out.process_one(*seq, pick(id_of("a")));
  ASSERT_TRUE(o.event.final);
  EXPECT_EQ(o.event.finish_reason, FinishReason::kLength);
  EXPECT_EQ(o.event.stop_offset, -1);
  EXPECT_EQ(o.event.generated_text, "ea");
  EXPECT_EQ(o.event.generated_tokens, 2);
  EXPECT_EQ(o.event.input_tokens, 2);
  EXPECT_EQ(o.event.seed, 42u);
  EXPECT_EQ(o.event.index, 0u);
  EXPECT_NEAR(o.event.logprob_sum, 2 * o.event.token.logprob, 1e-6);
  EXPECT_GE(o.event.inference_seconds, 0.0);
  EXPECT_EQ(seq->tokens.size(), 4u);  // the prompt, then the generated tokens
}

TEST_F(OutputProcessorTest, ThePromptsRecordsGoOutOnceWithTheFirstEvent) {
  OutputProcessor out(tok, {});
  GenerationRequest r = request(3);
  r.prompt_ids = {tok.bos_id(), id_of("ta"), id_of("te")};
  r.prompt_details = true;
  r.prompt_top_n = 2;
  auto seq = sequence(std::move(r));
  out.record_prompt_row(*seq, 0, pick(id_of("ta")));
  out.record_prompt_row(*seq, 1, pick(id_of("ea")));  // the model did not expect "te"
  out.record_prompt_row(*seq, 2, pick(id_of("e")));   // the last row predicts no prompt token
  SequenceOutput first = out.process_one(*seq, pick(id_of("e")));
  ASSERT_EQ(first.event.prefill.size(), 3u);
  ASSERT_EQ(first.event.prefill_top.size(), 3u);
  EXPECT_TRUE(std::isnan(first.event.prefill[0].logprob));
  EXPECT_EQ(first.event.prefill[1].id, id_of("ta"));
  EXPECT_EQ(first.event.prefill[1].text, "ta");
  EXPECT_GT(first.event.prefill[1].logprob, first.event.prefill[2].logprob);
  ASSERT_EQ(first.event.prefill_top[2].size(), 2u);
  EXPECT_EQ(first.event.prefill_top[2][0].id, id_of("ea"));
  EXPECT_TRUE(out.process_one(*seq, pick(id_of("e"))).event.prefill.empty());  // sent once
}

// Moved from engine_service_test (TGI): the token's logprob and alternatives are of
// the distribution it was drawn from; top_k 3 with 5 alternatives asked gives the 3 kept.
TEST_F(OutputProcessorTest, TgiAlternativesAreOfTheWarpedDistribution) {
  OutputProcessor out(tok, {});
  GenerationRequest r = request(4);
  r.params.do_sample = true;
  r.params.top_k = 3;
  r.params.seed = 9;
  r.top_n_tokens = 5;
  auto seq = sequence(std::move(r));
  std::vector<float> logits(kVocab);
  for (int step = 0; step < 4; ++step) {
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>((i * 7919 + static_cast<size_t>(step) * 104729) % 1000) / 250;
    SequenceOutput o = out.process_one(*seq, logits);
    ASSERT_FALSE(o.fault);
    ASSERT_EQ(o.event.top_tokens.size(), 3u);
    double mass = 0;
    bool has_token = false;
    for (const TokenInfo& t : o.event.top_tokens) {
      mass += std::exp(t.logprob);
      if (t.id == o.event.token.id) has_token = std::fabs(t.logprob - o.event.token.logprob) < 1e-6;
    }
    EXPECT_NEAR(mass, 1.0, 1e-4);
    EXPECT_TRUE(has_token);
  }
}

// process() takes one row per plan entry that wants logits, in plan order.
TEST_F(OutputProcessorTest, RowsGoToThePlanEntriesThatWantLogits) {
  OutputProcessor out(tok, {});
  auto a = sequence(request(5)), b = sequence(request(5)), c = sequence(request(5));
  StepPlan plan;
  plan.steps.resize(3);
  plan.steps[0].want_logits = true;
  plan.steps[2].want_logits = true;  // b is mid-prefill: no row
  plan.owners = {a.get(), b.get(), c.get()};
  std::vector<float> rows = pick(id_of("ta"));
  const std::vector<float> second = pick(id_of("te"));
  rows.insert(rows.end(), second.begin(), second.end());
  StepOutputs& outputs = out.process(plan, rows, kVocab);
  ASSERT_EQ(outputs.outputs.size(), 2u);
  EXPECT_EQ(outputs.outputs[0].seq, a.get());
  EXPECT_EQ(outputs.outputs[0].event.token.id, id_of("ta"));
  EXPECT_EQ(outputs.outputs[1].seq, c.get());
  EXPECT_EQ(outputs.outputs[1].event.token.id, id_of("te"));
  EXPECT_EQ(b->generated(), 0);
}

// A fault while sampling is returned as a value naming it; no event, nothing thrown.
TEST_F(OutputProcessorTest, AFaultIsReturnedNotThrown) {
  OutputProcessor out(tok, {});
  out.set_fault_hook([](FaultSite site, uint64_t ticket) {
    if (site == FaultSite::kSample && ticket == 7) throw std::runtime_error("sampler exploded");
  });
  auto seq = sequence(request(5));
  SequenceOutput o = out.process_one(*seq, pick(id_of("ta")));
  ASSERT_TRUE(o.fault.has_value());
  EXPECT_EQ(o.fault->code, ErrorCode::kInternal);
  EXPECT_NE(o.fault->message.find("sampler exploded"), std::string::npos);
  EXPECT_FALSE(o.event.final);
  EXPECT_EQ(seq->generated(), 0);
}

// A tokenizer whose config cleans up tokenization spaces (gpt2-small) streams cleaned text,
// but not to a grammar-constrained sequence: the grammar matched the raw text.
TEST(SequenceDecoder, CleansUpUnlessAGrammarConstrainsTheText) {
  auto gpt2 = HfTokenizer::load_dir(std::string(testing::source_dir()) + "/tests/data/hf_tokenizer/gpt2-small");
  ASSERT_TRUE(gpt2.ok()) << gpt2.error().message;
  ASSERT_TRUE(gpt2->cleans_up_tokenization_spaces());
  Submission sub;
  GenerationRequest plain;
  plain.params.max_new_tokens = 4;
  plain.prompt_ids = gpt2->encode("Hi", false);
  GenerationRequest constrained = plain;
  auto grammar = grammar_from_regex("[a-z ,.]+", GrammarLimits{});
  ASSERT_TRUE(grammar.ok());
  constrained.params.grammar = *grammar;
  Sequence a(&sub, 0, plain, *gpt2), b(&sub, 1, constrained, *gpt2);
  EXPECT_TRUE(a.decoder.cleans_up());
  EXPECT_FALSE(b.decoder.cleans_up());
  std::string text_a, text_b;
  for (const int32_t id : gpt2->encode(" fine , thanks .", false)) {
    text_a += a.decoder.push(id);
    text_b += b.decoder.push(id);
  }
  EXPECT_EQ(text_a + a.decoder.finish(), " fine, thanks.");
  EXPECT_EQ(text_b + b.decoder.finish(), " fine , thanks .");
}

}  // namespace
}  // namespace plimsoll::sched
