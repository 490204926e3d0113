// Metric observations of one request, from its events (TGI's durations and
// token counts, Plimsoll's TTFT and inter-token latency).
#include "api/request_recorder.h"

#include <exception>

namespace plimsoll::api {

RequestRecorder::RequestRecorder(metrics::ServerMetrics& metrics)
    : metrics_(metrics), received_(Clock::now()) {
  metrics_.request_count.inc();
}

RequestRecorder::~RequestRecorder() {
  // While unwinding, the route edge counts the error it answers with.
  if (!settled_ && std::uncaught_exceptions() == 0) metrics_.failure("cancelled").inc();
}

double RequestRecorder::seconds_since(Clock::time_point t) const {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void RequestRecorder::set_items(size_t items) { last_token_.assign(items, Clock::time_point{}); }

void RequestRecorder::on_event(const sched::TokenEvent& event) {
  if (event.index >= last_token_.size()) return;
  Clock::time_point& last = last_token_[event.index];
  if (event.token.id >= 0) {
    if (last == Clock::time_point{}) {
      metrics_.time_to_first_token_seconds.observe(seconds_since(received_));
    } else {
      metrics_.inter_token_latency_seconds.observe(seconds_since(last));
    }
    last = Clock::now();
  }
  if (!event.final || event.error) return;
  metrics_.request_duration_seconds.observe(seconds_since(received_));
  metrics_.request_queue_duration_seconds.observe(event.queue_seconds);
  metrics_.request_inference_duration_seconds.observe(event.inference_seconds);
  if (event.generated_tokens > 0) {
    metrics_.request_mean_time_per_token_seconds.observe(event.inference_seconds /
                                                         static_cast<double>(event.generated_tokens));
  }
  metrics_.request_generated_tokens.observe(static_cast<double>(event.generated_tokens));
  metrics_.request_input_tokens.observe(static_cast<double>(event.input_tokens));
}

void count_rejection(metrics::ServerMetrics& metrics, const sched::Rejection& rejection) {
  metrics.rejection(rejection.reason ? rejection.reason : rejection_reason(rejection.error.code)).inc();
}

void RequestRecorder::succeed() {
  if (settled_) return;
  settled_ = true;
  metrics_.request_success.inc();
}

void RequestRecorder::fail(const ApiError& error) {
  if (settled_) return;
  settled_ = true;
  metrics_.failure(error.error_type).inc();
}

}  // namespace plimsoll::api
