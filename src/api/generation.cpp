// The request life cycle after validation: submit (rejections before any
// byte), collect events for JSON answers, or pump them as Server-Sent Events.
#include "api/generation.h"

#include <chrono>

namespace plimsoll::api {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kPollInterval{100};  // how often waits look at `stopping`

ApiError stopping_error() {
  return ApiError{503, "unavailable", "the server is shutting down"};
}

void add_event(sched::TokenEvent&& event, bool keep_tokens, ItemOutcome* item) {
  if (keep_tokens && event.token.id >= 0) {
    item->tokens.push_back(event.token);
    item->top_tokens.push_back(event.top_tokens);
  }
  if (event.final) item->final = std::move(event);
}

// One stream's state, shared by httplib's content provider and releaser.
class StreamPump {
 public:
  StreamPump(RouteContext& ctx, Submission submission, std::unique_ptr<StreamFormatter> formatter,
             std::shared_ptr<RequestRecorder> recorder)
      : ctx_(ctx), submission_(std::move(submission)), formatter_(std::move(formatter)),
        recorder_(std::move(recorder)), last_write_(std::chrono::steady_clock::now()) {
    ctx_.open_streams.fetch_add(1);
  }
  ~StreamPump() { ctx_.open_streams.fetch_sub(1); }
  StreamPump(const StreamPump&) = delete;
  StreamPump& operator=(const StreamPump&) = delete;

  // Called by httplib until it returns false or the sink is done.
  // While stopping, what is already queued (the engine's final error events
  // after a drain) is still written; the stream ends when nothing is left.
  bool pump(httplib::DataSink& sink) {
    const bool stopping = ctx_.stopping.load();
    std::optional<sched::TokenEvent> event = submission_.queue->pop(stopping ? milliseconds(0) : kPollInterval);
    if (!event) return stopping ? false : keep_alive(sink);
    recorder_->on_event(*event);
    bool end = false;
    std::string frames = formatter_->on_event(*event, &end);
    if (event->error) recorder_->fail(api_error(*event->error));
    if (!write(sink, frames)) return false;
    if (!end && submission_.queue->finished()) {
      if (!write(sink, formatter_->on_finish())) return false;
      recorder_->succeed();
      end = true;
    }
    if (end) sink.done();
    return true;
  }

  // Called once the response is over, however it ended.
  void release() {
    if (!submission_.queue->finished()) ctx_.service.cancel(submission_.ticket);
  }

 private:
  bool write(httplib::DataSink& sink, const std::string& bytes) {
    if (bytes.empty()) return true;  // an empty write would end httplib's chunked stream
    last_write_ = std::chrono::steady_clock::now();
    return sink.write(bytes.data(), bytes.size());
  }

  // An SSE comment while nothing happens, so a vanished client is noticed.
  bool keep_alive(httplib::DataSink& sink) {
    auto idle = std::chrono::steady_clock::now() - last_write_;
    if (idle < milliseconds(ctx_.config.sse_keepalive_ms)) return true;
    return write(sink, ":\n\n");
  }

  RouteContext& ctx_;
  Submission submission_;
  std::unique_ptr<StreamFormatter> formatter_;
  std::shared_ptr<RequestRecorder> recorder_;
  std::chrono::steady_clock::time_point last_write_;
};

}  // namespace

std::optional<ApiError> submit(RouteContext& ctx, std::vector<sched::GenerationRequest> items,
                               RequestRecorder& recorder, Submission* out) {
  if (ctx.stopping.load()) return stopping_error();
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

std::optional<ApiError> collect(RouteContext& ctx, const Submission& submission,
                                RequestRecorder& recorder, std::vector<ItemOutcome>* out, bool keep_tokens) {
  out->assign(submission.queue->items(), ItemOutcome{});
  while (!submission.queue->finished()) {
    if (ctx.stopping.load()) {
      ctx.service.cancel(submission.ticket);
      return stopping_error();
    }
    std::optional<sched::TokenEvent> event = submission.queue->pop(kPollInterval);
    if (!event || event->index >= out->size()) continue;
    recorder.on_event(*event);
    if (event->error) {
      if (!submission.queue->finished()) ctx.service.cancel(submission.ticket);
      return api_error(*event->error);
    }
    const size_t index = event->index;
    add_event(std::move(*event), keep_tokens, &(*out)[index]);
  }
  return std::nullopt;
}

std::string sse_frame(const std::string& data, bool space_after_colon) {
  return (space_after_colon ? "data: " : "data:") + data + "\n\n";
}

void start_stream(RouteContext& ctx, httplib::Response& res, Submission submission,
                  std::unique_ptr<StreamFormatter> formatter,
                  std::shared_ptr<RequestRecorder> recorder) {
  auto pump = std::make_shared<StreamPump>(ctx, std::move(submission), std::move(formatter),
                                           std::move(recorder));
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [pump](size_t /*offset*/, httplib::DataSink& sink) { return pump->pump(sink); },
      [pump](bool /*success*/) { pump->release(); });
}

}  // namespace plimsoll::api
