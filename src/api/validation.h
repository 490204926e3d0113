// Request validation with TGI's rules and messages: TGI `parameters` into
// SamplingParams, and prompts into token ids checked against the limits.
#pragma once

#include <string_view>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/api_config.h"
#include "api/field_reader.h"
#include "api/json_text.h"
#include "core/result.h"
#include "sched/generation_service.h"
#include "sched/request_cost.h"
#include "tokenizer/text_tokenizer.h"

namespace plimsoll {
class GrammarCache;
}  // namespace plimsoll

namespace plimsoll::api {

// What TGI's `parameters` ask for besides sampling.
struct TgiOptions {
  bool details = false;
  bool return_full_text = false;
  bool decoder_input_details = false;
  int32_t top_n_tokens = 0;
  int64_t best_of = 1;                    // sequences per input; the best (mean logprob) answers
  std::optional<int64_t> max_new_tokens;  // unset: the default, clipped to the room left
  std::optional<int64_t> truncate;        // keep the last N prompt tokens
  int32_t priority = 0;                   // vLLM's `priority` (sched::GenerationRequest::priority)
};

// vLLM's `priority`: any int32 (lower first); absent: 0.
Result<int32_t> read_priority(const FieldReader& f);

struct TgiParameters {
  SamplingParams sampling;
  TgiOptions options;
};

// `parameters` of a TGI request (null/absent: TGI's defaults, which sample).
// Unknown fields are ignored, as TGI does.
// `defaults`: the model's generation_config.json, under the request's fields.
// `default_full_text`: return_full_text when unset (TGI's POST /: true).
// `body_text`: the body's text (its `parameters.grammar` schema is read again
// from it in the client's key order; empty: the tree's sorted order).
Result<TgiParameters> parse_tgi_parameters(const json* parameters,
                                           const sched::ServiceLimits& limits, bool streaming,
                                           const GenerationDefaults& defaults = {},
                                           bool default_full_text = false, std::string_view body_text = {},
                                           GrammarCache* grammars = nullptr);

// The max_new_tokens a request that gives none gets: generation_config's
// max_new_tokens, else `fallback` (the route's default).
int64_t default_max_new_tokens(const GenerationDefaults& defaults, int64_t fallback);

// One prompt to submit.
struct PromptPlan {
  std::string text;               // as given (for return_full_text / echo)
  std::optional<int64_t> max_new_tokens;
  std::optional<int64_t> truncate;
  bool parse_special = false;     // rendered chat prompts may contain control pieces
  // Whether the tokenizer's special tokens (BOS, ...) go around the text; unset:
  // the tokenizer's default, except for a parse_special text that starts with
  // BOS's text. A model's chat template gives false, as transformers encodes
  // its output with add_special_tokens=False.
  std::optional<bool> add_special;
  // generation_config's max_length (prompt + new tokens): when max_new_tokens is
  // unset, what it leaves after the prompt is the default (at least 1).
  std::optional<int64_t> default_max_length;
  // Token ids given by the client instead of `text` (OpenAI token prompts);
  // checked against the vocabulary and the limits, never tokenized.
  const std::vector<int32_t>* ids = nullptr;
  const char* field = "inputs";              // the prompt's name in messages (OpenAI: "prompt", "messages")
  const char* max_field = "max_new_tokens";  // the length's name (OpenAI: "max_tokens")
};

// Tokenizes and checks one prompt against the limits with TGI's messages;
// fills prompt_ids and params.max_new_tokens of `request`.
Status build_prompt(const PromptPlan& plan, const TextTokenizer& tokenizer,
                    const sched::ServiceLimits& limits, int64_t default_max_new_tokens,
                    sched::GenerationRequest* request);

// The bytes of `text` that build_prompt can tokenize: longer texts are
// refused (or cut, with truncate) by their length first.
int64_t tokenized_bytes(const std::string& text, const TextTokenizer& tokenizer, const sched::ServiceLimits& limits);

// Checks a stop list against max_stop_sequences (and empty entries).
Status check_stop(const StopList& stop, const sched::ServiceLimits& limits);
// Checks a client batch's length against max_client_batch_size (0 = unlimited).
Status check_client_batch(size_t items, const sched::ServiceLimits& limits);

}  // namespace plimsoll::api
