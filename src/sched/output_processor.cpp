// A step's logits to its events: mask, sample, detokenize, stop, build.
#include "sched/output_processor.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <spdlog/spdlog.h>

namespace plimsoll::sched {
namespace {

// Sampler alternatives as token records (the token's own text, no context).
void to_token_infos(const std::vector<SampledToken>& alternatives, const TextTokenizer& tok,
                    std::vector<TokenInfo>& out) {
  out.clear();
  out.reserve(alternatives.size());
  for (const SampledToken& a : alternatives) {
    out.push_back({a.id, a.logprob, tok.piece_string(-1, a.id), tok.is_special(a.id)});
  }
}

}  // namespace

void PromptRows::row(size_t seq, int64_t pos, std::span<const float> logits) {
  output_.record_prompt_row(*plan_.owners[seq], pos, logits);
}

OutputProcessor::OutputProcessor(const TextTokenizer& tokenizer, const std::vector<int32_t>& extra_eos_ids,
                                 std::shared_ptr<const TokenTrie> trie, int64_t mask_slots)
    : tokenizer_(tokenizer),
      trie_(trie ? std::move(trie) : std::make_shared<const TokenTrie>(TokenTrie::build(tokenizer))) {
  grammar_scratch_.reserve(*trie_);
  if (mask_slots > 0) mask_ahead_ = std::make_unique<MaskAhead>(trie_, mask_slots);
  end_ids_.assign(extra_eos_ids.begin(), extra_eos_ids.end());
  end_ids_.push_back(tokenizer_.eos_id());
}

int64_t OutputProcessor::tokens_left(const Sequence& seq) {
  return seq.request.params.max_new_tokens - seq.generated();
}

bool OutputProcessor::is_end_id(int32_t id) const {
  return std::find(end_ids_.begin(), end_ids_.end(), id) != end_ids_.end();
}

void OutputProcessor::start_masks(const StepPlan& plan) {
  if (!mask_ahead_) return;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Sequence& seq = *plan.owners[i];
    if (!plan.steps[i].want_logits || !seq.grammar.active()) continue;
    seq.mask_slot = mask_ahead_->start(seq.grammar, tokens_left(seq));
  }
}

void OutputProcessor::clear_masks() {
  if (mask_ahead_) mask_ahead_->clear();
}

StepOutputs& OutputProcessor::process(const StepPlan& plan, std::span<const float> logits, int64_t vocab_size) {
  outputs_.outputs.clear();
  const size_t vocab = static_cast<size_t>(vocab_size);
  size_t row = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (!plan.steps[i].want_logits) continue;
    outputs_.outputs.push_back(process_one(*plan.owners[i], logits.subspan(row++ * vocab, vocab)));
  }
  clear_masks();  // before the scheduler releases any sequence
  return outputs_;
}

SequenceOutput OutputProcessor::process_one(Sequence& seq, std::span<const float> logits) {
  SequenceOutput out;
  out.seq = &seq;
  try {
    if (fault_hook_) fault_hook_(FaultSite::kSample, seq.owner->ticket);
    logits_copy_.resize(logits.size());  // [vocab]: allocates on the first call only
    const SampledToken token = sample(seq, logits);
    out.event = build_event(seq, token);
  } catch (...) {  // contained: only this sequence ends
    const std::string what = describe_current_exception();
    spdlog::error("engine fault sampling or detokenizing request {} item {}: {}; that sequence ends with an error",
                  seq.owner->ticket, seq.index, what);
    out.fault = fault_error(what);
  }
  return out;
}

// The next token under the sequence's grammar, appended to seq.tokens; its
// alternatives are left in alternatives_.
SampledToken OutputProcessor::sample(Sequence& seq, std::span<const float> logits) {
  const int32_t top_n = seq.request.top_n_tokens;
  const bool raw = seq.request.raw_logprobs, needed = seq.request.logprobs_needed;
  if (seq.grammar.active()) {
    constrain(seq, logits);  // copies them masked
  } else {
    std::copy(logits.begin(), logits.end(), logits_copy_.begin());
  }
  SampledToken token = seq.sampler.sample(logits_copy_, scratch_, raw ? 0 : top_n, &alternatives_, needed && !raw);
  if (raw && needed) token.logprob = raw_logprobs(logits, token.id, top_n, scratch_.order, &alternatives_);
  seq.sampler.accept(token.id);
  if (seq.grammar.active()) seq.grammar.advance(token.id, *trie_, grammar_scratch_);
  seq.tokens.push_back(token.id);  // reserved to the full length: does not allocate
  return token;
}

// logits_copy_ := `logits` masked to the tokens the sequence's grammar allows.
// When the vocabulary cannot spell what the grammar needs, only the end token is left.
void OutputProcessor::constrain(Sequence& seq, std::span<const float> logits) {
  std::optional<bool> allowed;
  if (mask_ahead_ && seq.mask_slot >= 0) allowed = mask_ahead_->finish(seq.mask_slot, logits, logits_copy_, end_ids_);
  seq.mask_slot = -1;
  if (!allowed) {  // (no mask computed ahead: copy, then mask in place)
    std::copy(logits.begin(), logits.end(), logits_copy_.begin());
    allowed = seq.grammar.mask(logits_copy_, *trie_, tokens_left(seq), end_ids_, grammar_scratch_);
  }
  if (*allowed) return;
  spdlog::warn("request {} item {}: no token can continue its grammar; ending it", seq.owner->ticket, seq.index);
  const float end_logit = 0.0f;
  std::fill(logits_copy_.begin(), logits_copy_.end(), -std::numeric_limits<float>::infinity());
  if (tokenizer_.eos_id() >= 0) logits_copy_[static_cast<size_t>(tokenizer_.eos_id())] = end_logit;
}

TokenEvent OutputProcessor::build_event(Sequence& seq, const SampledToken& token) {
  TokenEvent ev;
  ev.index = seq.index;
  const int32_t prev_id = seq.tokens[seq.tokens.size() - 2];  // the token is already appended
  ev.token = {token.id, token.logprob, tokenizer_.piece_string(prev_id, token.id),
              tokenizer_.is_special(token.id)};
  seq.logprob_sum += token.logprob;
  if (!seq.prefill.empty()) {  // the first event carries the prompt's records (moved: sent once)
    ev.prefill = std::move(seq.prefill);
    ev.prefill_top = std::move(seq.prefill_top);
    seq.prefill.clear();
    seq.prefill_top.clear();
  }
  set_finish(seq, token.id, ev);
  if (seq.request.top_n_tokens > 0) to_token_infos(alternatives_, tokenizer_, ev.top_tokens);
  if (seq.finish) fill_final(seq, ev);
  return ev;
}

// EOS (an end id, unless ignore_eos while the grammar is unfinished), else a
// stop sequence in the new text, else the grammar's end: an output that
// nothing may follow, or one complete when max_new_tokens is reached, ends as
// if EOS came (OpenAI "stop", not "length": the value is whole), else
// max_new_tokens. Sets ev.text.
void OutputProcessor::set_finish(Sequence& seq, int32_t id, TokenEvent& ev) {
  const bool eos = is_end_id(id) && (!seq.request.params.ignore_eos || seq.grammar.finished());
  if (!eos) {
    ev.text = seq.decoder.push(id);
    if (seq.stops.push(ev.text)) seq.finish = FinishReason::kStopSequence;
  } else {
    seq.finish = FinishReason::kEosToken;
  }
  if (seq.finish) return;
  const bool at_length = seq.generated() >= seq.request.params.max_new_tokens;
  if (seq.grammar.finished() || (at_length && seq.grammar.complete())) {
    seq.finish = FinishReason::kEosToken;
  } else if (at_length) {
    seq.finish = FinishReason::kLength;
  }
}

// The final event's text tail (or stop offset) and the sequence's figures.
void OutputProcessor::fill_final(Sequence& seq, TokenEvent& ev) {
  if (*seq.finish != FinishReason::kStopSequence) {
    const std::string tail = seq.decoder.finish();
    ev.text += tail;
    seq.stops.push(tail);
  } else {
    ev.stop_offset = static_cast<int64_t>(seq.stops.match_begin());
  }
  ev.final = true;
  ev.finish_reason = *seq.finish;
  ev.generated_tokens = seq.generated();
  ev.input_tokens = seq.prompt_len;
  ev.seed = seq.sampler.seed();
  ev.generated_text = seq.stops.text();
  ev.logprob_sum = seq.logprob_sum;
  const Clock::time_point now = Clock::now();
  const Clock::time_point started = seq.started_at.value_or(now);
  ev.queue_seconds = std::chrono::duration<double>(started - seq.queued_at).count();
  ev.inference_seconds = std::chrono::duration<double>(now - started).count();
}

void OutputProcessor::record_prompt_row(Sequence& seq, int64_t pos, std::span<const float> logits) {
  const int64_t next = pos + 1;  // the row at pos predicts the prompt token at pos + 1
  if (next >= seq.prompt_len || static_cast<int64_t>(seq.prefill.size()) != next) return;
  const int32_t id = seq.tokens[static_cast<size_t>(next)];
  const int32_t top_n = seq.request.prompt_top_n;
  const float logprob = raw_logprobs(logits, id, top_n, scratch_.order, &alternatives_);
  seq.prefill.push_back({id, logprob, tokenizer_.piece_string(seq.tokens[static_cast<size_t>(pos)], id),
                         tokenizer_.is_special(id)});
  if (top_n > 0) {
    seq.prefill_top.emplace_back();
    to_token_infos(alternatives_, tokenizer_, seq.prefill_top.back());
  }
}

}  // namespace plimsoll::sched
