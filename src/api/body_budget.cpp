// The body budget's reservations (an atomic counter) and the transport's
// worst-case arithmetic.
#include "api/body_budget.h"

#include <algorithm>
#include <utility>

#include "api/api_config.h"

namespace plimsoll::api {
namespace {

// A session's fixed state: Beast stream and strand, parser, timers, request
// and response objects, the lingering-close scratch buffer.
constexpr int64_t kSessionStateBytes = 16 * 1024;
// What one read may add to the buffer beyond the head limit.
constexpr int64_t kReadChunkBytes = 8 * 1024;
// Frames one stream write gathers (kStreamPullBytes in generation.cpp), plus one frame over.
constexpr int64_t kStreamWriteBytes = 32 * 1024;

}  // namespace

int64_t body_reservation_bytes(int64_t content_length) {
  return content_length + json_tree_limit_bytes(content_length);
}

BodyReservation::BodyReservation(BodyReservation&& other) noexcept
    : budget_(std::move(other.budget_)), bytes_(std::exchange(other.bytes_, 0)) {}

BodyReservation& BodyReservation::operator=(BodyReservation&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::move(other.budget_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void BodyReservation::release() {
  if (budget_ && bytes_ > 0) budget_->give_back(bytes_);
  budget_.reset();
  bytes_ = 0;
}

std::shared_ptr<BodyBudget> BodyBudget::create(int64_t total_bytes) {
  return std::shared_ptr<BodyBudget>(new BodyBudget(total_bytes));
}

BodyReservation BodyBudget::try_reserve(int64_t bytes) {
  if (bytes <= 0) return {};
  int64_t used = used_bytes_.load();
  do {
    if (used + bytes > total_bytes_) return {};
  } while (!used_bytes_.compare_exchange_weak(used, used + bytes));
  return BodyReservation(shared_from_this(), bytes);
}

int64_t body_budget_bytes(const ApiConfig& config) {
  if (config.max_body_bytes_in_flight > 0) return config.max_body_bytes_in_flight;
  return body_reservation_bytes(config.payload_limit_bytes);
}

int64_t connection_buffer_bytes(const ApiConfig& config) {
  return config.max_header_bytes + kReadChunkBytes + kStreamWriteBytes + kSessionStateBytes;
}

int64_t transport_worst_case_bytes(const ApiConfig& config, int64_t max_concurrent_requests) {
  return body_budget_bytes(config) + connection_buffer_bytes(config) * config.max_connections +
         config.stream_queue_bytes * max_concurrent_requests;
}

}  // namespace plimsoll::api
