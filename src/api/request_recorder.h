// RequestRecorder: one HTTP generation request's metrics — counted on
// arrival, per-token latencies, per-item durations, success or failure once.
#pragma once

#include <chrono>
#include <vector>

#include "api/errors.h"
#include "metrics/server_metrics.h"
#include "sched/request.h"

namespace plimsoll::api {

// plimsoll_rejections_total{reason}: the rejection's own reason, else its code's.
void count_rejection(metrics::ServerMetrics& metrics, const sched::Rejection& rejection);

class RequestRecorder {
 public:
  // Counts the request (tgi_request_count) and starts its clock.
  explicit RequestRecorder(metrics::ServerMetrics& metrics);
  // Unsettled and not unwinding (the client went away): counts err="cancelled".
  ~RequestRecorder();
  RequestRecorder(const RequestRecorder&) = delete;
  RequestRecorder& operator=(const RequestRecorder&) = delete;

  // Call once the submission's item count is known.
  void set_items(size_t items);
  // Observes TTFT / inter-token latency, and at a final event the item's durations.
  void on_event(const sched::TokenEvent& event);
  void on_rejection(const sched::Rejection& rejection) { count_rejection(metrics_, rejection); }
  // Exactly one of these counts, the first call wins.
  void succeed();
  void fail(const ApiError& error);

 private:
  using Clock = std::chrono::steady_clock;
  double seconds_since(Clock::time_point t) const;

  metrics::ServerMetrics& metrics_;
  Clock::time_point received_;
  std::vector<Clock::time_point> last_token_;  // per item; epoch = no token yet
  bool settled_ = false;
};

}  // namespace plimsoll::api
