// The plain data that crosses between the HTTP side and the engine thread:
// what a client asks for (GenerationRequest) and what comes back (TokenEvent).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "engine/finish_reason.h"
#include "engine/sampling_params.h"

namespace plimsoll::sched {

struct GenerationRequest {
  std::vector<int32_t> prompt_ids;   // tokenized by the API side (BOS included when wanted)
  SamplingParams params;             // max_new_tokens, stop, seed, ...
  int32_t top_n_tokens = 0;          // alternatives reported per generated token (0 = none)
  bool prompt_details = false;       // report the prompt tokens' logprobs (TGI decoder_input_details, OpenAI echo + logprobs)
  int32_t prompt_top_n = 0;          // with prompt_details: alternatives per prompt token (OpenAI echo + logprobs)
  // Logprobs and alternatives of the model's own distribution (log-softmax of
  // the logits; OpenAI routes, as vLLM), else of the distribution the token was
  // drawn from, after bias, penalties and warpers (TGI).
  bool raw_logprobs = false;
  // Whether anything reads the generated tokens' logprobs (the answer's records, a
  // best_of choice, TGI's token events): without, greedy decoding skips the softmax.
  bool logprobs_needed = true;
  // What the HTTP side keeps for the answer, so admission can charge it
  // before any work starts (sched/request_cost.h):
  bool token_records = false;        // the answer lists every generated token (TGI details, OpenAI logprobs)
  bool streamed = false;             // events go out as they come; no per-token records accumulate
  int64_t held_text_bytes = 0;       // prompt text kept for the answer (echo, return_full_text)
  int32_t tenant = 0;                // index into the service's tenant table (sched/tenants.h); 0: default
  // vLLM's `priority`: within a tenant, lower starts first and may preempt
  // higher (`plimsoll batch` sends 1; interactive requests leave the default 0).
  int32_t priority = 0;
};

struct TokenInfo {
  int32_t id = 0;
  float logprob = 0.0f;   // NaN where unknown (the first prompt token)
  std::string text;       // the token's own text (may be partial UTF-8 for byte tokens)
  bool special = false;
};

// One event per generated token; the last one of a sequence has `final` set.
struct TokenEvent {
  size_t index = 0;                  // the item's position in its submission
  TokenInfo token;                   // unset (id -1) in a final event that carries no token
  std::string text;                  // complete UTF-8 text this token added (may be "")
  std::vector<TokenInfo> top_tokens; // top_n_tokens alternatives, most likely first
  // With prompt_details, on the sequence's first event: the prompt tokens with
  // their logprobs (the first one's is NaN) and prompt_top_n alternatives each.
  std::vector<TokenInfo> prefill;
  std::vector<std::vector<TokenInfo>> prefill_top;
  bool final = false;
  // Set on the final event:
  FinishReason finish_reason = FinishReason::kLength;
  int64_t generated_tokens = 0;
  int64_t input_tokens = 0;
  uint64_t seed = 0;
  std::string generated_text;        // the whole generated text (a matched stop sequence included, as TGI)
  int64_t stop_offset = -1;          // where the matched stop sequence begins in generated_text (-1: none)
  double logprob_sum = 0;            // the generated tokens' logprobs, summed (best_of ranks by the mean)
  double queue_seconds = 0;          // from submit to the first step
  double inference_seconds = 0;      // from the first step to the end
  std::optional<Error> error;        // set when the sequence failed or was aborted
};

// Receives events; called on the engine thread, so it must not block (push
// into a queue and wake the HTTP side).
using EventSink = std::function<void(TokenEvent&&)>;

}  // namespace plimsoll::sched
