// Submitting validated items to the GenerationService and getting answers
// back: collect-all for plain JSON routes, an SSE pump for streaming routes.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/errors.h"
#include "api/event_queue.h"
#include "api/request_recorder.h"
#include "api/route_context.h"

namespace plimsoll::api {

struct Submission {
  std::shared_ptr<EventQueue> queue;
  uint64_t ticket = 0;
  std::shared_ptr<void> charge;  // admission's byte charge: held until the answer is sent
  // HttpRequest::client_gone: collect() cancels when the client has left.
  std::shared_ptr<const std::atomic<bool>> client_gone;
};

// One item's answer, gathered from its events.
struct ItemOutcome {
  std::vector<sched::TokenInfo> tokens;                   // generated tokens, in order
  std::vector<std::vector<sched::TokenInfo>> top_tokens;  // per generated token
  std::vector<sched::TokenInfo> prefill;                  // prompt tokens (prompt_details), from the first event
  std::vector<std::vector<sched::TokenInfo>> prefill_top; // their alternatives (prompt_top_n)
  sched::TokenEvent final;                                // the final event
};

// Mean logprob per generated token: how best_of ranks an item's answers (TGI, OpenAI).
double mean_logprob(const ItemOutcome& item);

// The text a generated token's record shows: its own text (OpenAI logprobs),
// or TGI's: the text it added to the output ("" for a byte that completes no
// character yet, then the whole character); a special token shows its own.
enum class TokenText { kOwn, kAdded };
sched::TokenInfo reported_token(const sched::TokenEvent& event, TokenText text);

// Submits as `req`'s tenant (request_tenant); a rejection is recorded and
// returned (nothing was streamed yet).
std::optional<ApiError> submit(RouteContext& ctx, const HttpRequest& req, std::vector<sched::GenerationRequest> items,
                               RequestRecorder& recorder, Submission* out);

// Waits for every item's final event. An item's error, the server stopping,
// or the client leaving (Submission::client_gone) fails the whole request
// (the rest is cancelled). Each generated
// token (and its alternatives) is kept only with `keep_tokens` (details,
// logprobs), as admission charged it.
std::optional<ApiError> collect(RouteContext& ctx, const Submission& submission,
                                RequestRecorder& recorder, std::vector<ItemOutcome>* out, bool keep_tokens,
                                TokenText text = TokenText::kOwn);

// Turns events into SSE frames for one wire format.
class StreamFormatter {
 public:
  virtual ~StreamFormatter() = default;
  // Frames for one event ("" for none). Sets *end when the stream must stop
  // now (an item failed: its error frame is included).
  virtual std::string on_event(const sched::TokenEvent& event, bool* end) = 0;
  // Frames after every item's final event (e.g. "data: [DONE]\n\n").
  virtual std::string on_finish() = 0;
};

// "data:<json>\n\n" (TGI, no space) or "data: <json>\n\n" (OpenAI).
std::string sse_frame(const std::string& data, bool space_after_colon);

// Answers with 200 text/event-stream whose body pulls events through
// `formatter`. The event queue is bounded to ApiConfig::stream_queue_bytes
// from here on: a reader too slow for it gets an error event and its ticket
// is cancelled. A failed write (client gone) or an unfinished stream cancels
// the ticket; an exception while formatting ends the stream with an error event.
void start_stream(RouteContext& ctx, HttpResponse& res, Submission submission,
                  std::unique_ptr<StreamFormatter> formatter,
                  std::shared_ptr<RequestRecorder> recorder);

}  // namespace plimsoll::api
