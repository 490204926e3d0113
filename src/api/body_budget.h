// BodyBudget: the byte budget for request bodies in flight
// (--max-body-bytes-in-flight). Before a body is read the transport reserves
// what reading and parsing it can cost; a reservation is returned when the
// route is done with the body or the handler returns, whichever comes first.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "api/request_json.h"  // kJsonTreeBytesPerBodyByte, json_tree_limit_bytes

namespace plimsoll::api {

struct ApiConfig;


// What one body of `content_length` bytes reserves: the body and the largest
// JSON tree parse_request_json lets it build.
int64_t body_reservation_bytes(int64_t content_length);

class BodyBudget;

// Moves, never copies; returns its bytes on release() or destruction.
class BodyReservation {
 public:
  BodyReservation() = default;
  BodyReservation(std::shared_ptr<BodyBudget> budget, int64_t bytes) : budget_(std::move(budget)), bytes_(bytes) {}
  BodyReservation(BodyReservation&& other) noexcept;
  BodyReservation& operator=(BodyReservation&& other) noexcept;
  BodyReservation(const BodyReservation&) = delete;
  BodyReservation& operator=(const BodyReservation&) = delete;
  ~BodyReservation() { release(); }

  void release();
  int64_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<BodyBudget> budget_;
  int64_t bytes_ = 0;
};

class BodyBudget : public std::enable_shared_from_this<BodyBudget> {
 public:
  static std::shared_ptr<BodyBudget> create(int64_t total_bytes);

  // A reservation of `bytes`, or an empty one (bytes() == 0) when they are not free now.
  BodyReservation try_reserve(int64_t bytes);
  int64_t total_bytes() const { return total_bytes_; }
  int64_t used_bytes() const { return used_bytes_.load(); }

 private:
  friend class BodyReservation;
  explicit BodyBudget(int64_t total_bytes) : total_bytes_(total_bytes) {}
  void give_back(int64_t bytes) { used_bytes_.fetch_sub(bytes); }

  const int64_t total_bytes_;
  std::atomic<int64_t> used_bytes_{0};
};

// The budget in force: ApiConfig::max_body_bytes_in_flight, or when 0
// one payload-limit body's reservation (a worst-case tree; typical bodies'
// trees are a fraction of that, so several are read at once).
int64_t body_budget_bytes(const ApiConfig& config);

// Bytes one open connection can hold in the transport, whatever it sends:
// its read buffer (the head limit + one read) and the session's fixed state.
int64_t connection_buffer_bytes(const ApiConfig& config);

// The transport's own worst case, for the memory plan: the body budget +
// connection_buffer_bytes x max_connections + stream_queue_bytes x the
// submissions that can be in flight (`max_concurrent_requests`).
int64_t transport_worst_case_bytes(const ApiConfig& config, int64_t max_concurrent_requests);

}  // namespace plimsoll::api
