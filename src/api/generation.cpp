// The request life cycle after validation: submit (rejections before any
// byte), collect events for JSON answers, or pump them as Server-Sent Events.
#include "api/generation.h"

#include <algorithm>
#include <chrono>

namespace plimsoll::api {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kPollInterval{100};  // how often waits look at `stopping`

ApiError stopping_error() {
  return ApiError{503, "unavailable", "the server is shutting down"};
}

void add_event(sched::TokenEvent&& event, bool keep_tokens, TokenText text, ItemOutcome* item) {
  if (!event.prefill.empty()) {
    item->prefill = std::move(event.prefill);
    item->prefill_top = std::move(event.prefill_top);
  }
  if (keep_tokens && event.token.id >= 0) {
    item->tokens.push_back(reported_token(event, text));
    item->top_tokens.push_back(std::move(event.top_tokens));
  }
  if (event.final) item->final = std::move(event);
}

// What one pull() gathers at most before it returns (a frame over is kept whole).
constexpr size_t kStreamPullBytes = 16 * 1024;

// One stream's state: the transport pulls SSE bytes from it.
class StreamPump final : public ResponseStream {
 public:
  StreamPump(RouteContext& ctx, Submission submission, std::unique_ptr<StreamFormatter> formatter,
             std::shared_ptr<RequestRecorder> recorder)
      : ctx_(ctx), submission_(std::move(submission)), formatter_(std::move(formatter)),
        recorder_(std::move(recorder)), last_write_(std::chrono::steady_clock::now()) {
    ctx_.open_streams.fetch_add(1);
    submission_.queue->set_max_bytes(ctx_.config.stream_queue_bytes);
  }
  ~StreamPump() override {
    close(false);  // a stream the transport never wrote still cancels its ticket
    ctx_.open_streams.fetch_sub(1);
  }
  StreamPump(const StreamPump&) = delete;
  StreamPump& operator=(const StreamPump&) = delete;

  void set_wake(std::function<void()> wake) override { submission_.queue->set_listener(std::move(wake)); }

  // While stopping, what is already queued (the engine's final error events
  // after a drain) is still written; the stream ends when nothing is left.
  std::string pull(bool stopping, bool* done) override {
    std::string out;
    try {
      pull_events(stopping, &out, done);
    } catch (const std::exception& e) {
      out += end_with_error(make_error(ErrorCode::kInternal, e.what()));
      *done = true;
    }
    if (!out.empty()) last_write_ = std::chrono::steady_clock::now();
    return out;
  }

  // A reader too slow for the queue bound: stop generating for it now; the
  // error event goes out when (if) the pending write completes.
  void on_stalled_wake() override {
    if (submission_.queue->overflowed()) cancel();
  }

  void close(bool /*completed*/) override {
    if (closed_) return;
    closed_ = true;
    submission_.queue->set_listener(nullptr);
    if (!submission_.queue->finished()) cancel();
  }

 private:
  void cancel() {
    if (!cancelled_) ctx_.service.cancel(submission_.ticket);
    cancelled_ = true;
  }

  void pull_events(bool stopping, std::string* out, bool* done) {
    while (out->size() < kStreamPullBytes) {
      if (submission_.queue->overflowed()) {
        *out += end_with_error(slow_reader_error());
        *done = true;
        return;
      }
      std::optional<sched::TokenEvent> event = submission_.queue->pop(milliseconds(0));
      if (!event) break;
      recorder_->on_event(*event);
      bool end = false;
      *out += formatter_->on_event(*event, &end);
      if (event->error) recorder_->fail(api_error(*event->error));
      if (!end && submission_.queue->finished()) {
        *out += formatter_->on_finish();
        recorder_->succeed();
        end = true;
      }
      if (end) {
        *done = true;
        return;
      }
    }
    if (!out->empty()) return;
    if (stopping) {
      *done = true;
      return;
    }
    // An SSE comment while nothing happens, so a vanished client is noticed.
    if (std::chrono::steady_clock::now() - last_write_ >= milliseconds(ctx_.config.sse_keepalive_ms)) *out = ":\n\n";
  }

  Error slow_reader_error() const {
    return make_error(ErrorCode::kOverloaded,
                      "the client read the stream too slowly: its waiting events passed " +
                          std::to_string(submission_.queue->max_bytes()) +
                          " bytes (--stream-queue-bytes); the generation was cancelled");
  }

  // The error frame in the stream's own format; the ticket is cancelled.
  std::string end_with_error(const Error& error) {
    cancel();
    recorder_->fail(api_error(error));
    sched::TokenEvent event;
    event.final = true;
    event.error = error;
    bool end = false;
    try {
      return formatter_->on_event(event, &end);
    } catch (const std::exception&) {
      return sse_frame(error_body(api_error(error)), true);
    }
  }

  RouteContext& ctx_;
  Submission submission_;
  std::unique_ptr<StreamFormatter> formatter_;
  std::shared_ptr<RequestRecorder> recorder_;
  std::chrono::steady_clock::time_point last_write_;
  bool closed_ = false;
  bool cancelled_ = false;
};

}  // namespace

std::optional<ApiError> submit(RouteContext& ctx, const HttpRequest& req, std::vector<sched::GenerationRequest> items,
                               RequestRecorder& recorder, Submission* out) {
  if (ctx.stopping.load()) return stopping_error();
  const int32_t tenant = request_tenant(ctx.config, req);
  for (sched::GenerationRequest& item : items) item.tenant = tenant;
  recorder.set_items(items.size());
  out->queue = EventQueue::create(items.size());
  sched::SubmitResult result = ctx.service.submit(std::move(items), out->queue->sink());
  if (!result.accepted()) {
    recorder.on_rejection(*result.rejection);
    return api_error(*result.rejection);
  }
  out->ticket = result.ticket;
  out->charge = std::move(result.charge);
  return std::nullopt;
}

double mean_logprob(const ItemOutcome& item) {
  return item.final.logprob_sum / static_cast<double>(std::max<int64_t>(1, item.final.generated_tokens));
}

sched::TokenInfo reported_token(const sched::TokenEvent& event, TokenText text) {
  sched::TokenInfo token = event.token;
  if (text == TokenText::kAdded && !token.special) token.text = event.text;
  return token;
}

std::optional<ApiError> collect(RouteContext& ctx, const Submission& submission,
                                RequestRecorder& recorder, std::vector<ItemOutcome>* out, bool keep_tokens,
                                TokenText text) {
  out->assign(submission.queue->items(), ItemOutcome{});
  while (!submission.queue->finished()) {
    if (ctx.stopping.load()) {
      ctx.service.cancel(submission.ticket);
      return stopping_error();
    }
    if (submission.client_gone && submission.client_gone->load()) {
      ctx.service.cancel(submission.ticket);  // nobody is left to answer
      return ApiError{499, "cancelled", "the client closed the connection"};
    }
    std::optional<sched::TokenEvent> event = submission.queue->pop(kPollInterval);
    if (!event || event->index >= out->size()) continue;
    recorder.on_event(*event);
    if (event->error) {
      if (!submission.queue->finished()) ctx.service.cancel(submission.ticket);
      return api_error(*event->error);
    }
    const size_t index = event->index;
    add_event(std::move(*event), keep_tokens, text, &(*out)[index]);
  }
  return std::nullopt;
}

std::string sse_frame(const std::string& data, bool space_after_colon) {
  return (space_after_colon ? "data: " : "data:") + data + "\n\n";
}

void start_stream(RouteContext& ctx, HttpResponse& res, Submission submission,
                  std::unique_ptr<StreamFormatter> formatter,
                  std::shared_ptr<RequestRecorder> recorder) {
  res.status = 200;
  res.content_type = "text/event-stream";
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.stream = std::make_shared<StreamPump>(ctx, std::move(submission), std::move(formatter), std::move(recorder));
}

}  // namespace plimsoll::api
