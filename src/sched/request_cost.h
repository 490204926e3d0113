// What a request can cost in bytes of request memory, charged by admission
// before any work starts: prompt ids and held texts, stop lists and logit_bias
// lists and private grammars (once per submission: items share one; a grammar the
// server's GrammarCache holds is charged there, not here), per-item and per-sequence
// bookkeeping, and the answer it can produce (records, texts and JSON for
// max_new_tokens tokens, x (1 + top_n) with alternatives, prefill details x
// (1 + prompt_top_n)).
// The constants are upper bounds of what the code holds (glibc x86-64,
// malloc's 16-byte header and vector doubling included); see docs/architecture.md.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/request.h"

namespace plimsoll::sched {

struct CostModel {
  int64_t token_text_bytes = 16;  // the longest token's text (TextTokenizer::max_token_bytes)
  int64_t sequence_slots = 192;   // sequences the scheduler holds at once (3 x max_batch_size)
};

// One submission's charge, by part.
struct SubmissionCost {
  int64_t prompt_bytes = 0;       // prompt ids + prompt text the HTTP side keeps
  int64_t stop_bytes = 0;         // each distinct stop list and logit_bias list once
  int64_t bookkeeping_bytes = 0;  // per item (request) and per sequence it can run at once
  int64_t response_bytes = 0;     // events, records, texts and JSON of the answer
  int64_t total() const { return prompt_bytes + stop_bytes + bookkeeping_bytes + response_bytes; }
};

// Per generated token, the answer of one item can hold:
inline constexpr int64_t kGeneratedTextCopies = 6;  // stop matcher (x2 growth), final event/outcome, JSON, dump, body
// A token record (details / logprobs entry / alternative), measured with
// mallinfo2 on OpenAI's chat logprobs shape (the largest) for 7-byte tokens
// and 5 alternatives: 798 B per record (TokenInfo 62, JSON tree 604, dump
// 131), plus the body copy ~130; charged 768 + 72 per text byte (1,272 B).
inline constexpr int64_t kTokenRecordBytes = 768;
inline constexpr int64_t kRecordBytesPerTextByte = 72;  // text in the record, OpenAI's "bytes" array, escapes
inline constexpr int64_t kItemFixedBytes = 2048;    // outcome, final event, the item's JSON object
inline constexpr int64_t kSubmissionFixedBytes = 4096;  // queue, recorder, call, envelope

SubmissionCost submission_cost(const std::vector<GenerationRequest>& items, const CostModel& model);

// Bytes one answered token record takes (a TGI details token, an OpenAI
// logprobs entry, one alternative, a /tokenize entry).
int64_t token_record_bytes(const CostModel& model);

// Building `items` requests from prompts of `text_bytes` in all before they
// are submitted: the requests and their token ids (a text of n bytes has at
// most n + 2 tokens, its ids vector at most twice that).
int64_t prompt_build_bytes(int64_t items, int64_t text_bytes);

// A /tokenize call of `text_bytes`: ids, spans and one record per token.
int64_t tokenize_cost_bytes(int64_t text_bytes, const CostModel& model);

}  // namespace plimsoll::sched
