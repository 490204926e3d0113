// The body budget's reservations (an atomic counter), the bodies being read
// and which of them is cut when the budget is short, and the transport's
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
    : budget_(std::move(other.budget_)),
      bytes_(std::exchange(other.bytes_, 0)) {}

BodyReservation& BodyReservation::operator=(BodyReservation&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::move(other.budget_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

bool BodyReservation::try_grow(int64_t bytes) {
  if (bytes <= 0) return true;
  if (!budget_ || !budget_->take(bytes)) return false;
  bytes_ += bytes;
  return true;
}

void BodyReservation::shrink(int64_t bytes) {
  bytes = std::min(bytes, bytes_);
  if (bytes <= 0 || !budget_) return;
  budget_->give_back(bytes);
  bytes_ -= bytes;
}

void BodyReservation::release() {
  if (budget_ && bytes_ > 0) budget_->give_back(bytes_);
  budget_.reset();
  bytes_ = 0;
}

double receive_rate(const BodyReader& reader, std::chrono::steady_clock::time_point now) {
  const double seconds =
      std::max(std::chrono::duration<double>(now - reader.head_at).count(), 1e-3);
  return static_cast<double>(reader.received) / seconds;
}

CutPlan plan_cuts(const std::vector<BodyReader>& readers, int64_t shortfall, int64_t pending, uint64_t requester,
                  std::chrono::steady_clock::time_point now) {
  CutPlan plan;
  if (pending >= shortfall) {
    plan.enough = true;
    return plan;
  }
  struct Ranked {
    double rate;
    const BodyReader* reader;
  };
  std::vector<Ranked> ranked;
  for (const BodyReader& r : readers) {
    if (r.cut) continue;
    if (r.id != requester && r.held <= 0) continue;  // cutting it frees nothing
    ranked.push_back({receive_rate(r, now), &r});
  }
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.rate != b.rate) return a.rate < b.rate;
    if (a.reader->head_at != b.reader->head_at) return a.reader->head_at < b.reader->head_at;
    return a.reader->id < b.reader->id;
  });
  double requester_rate = -1;  // -1: no reader, a body already read
  for (const Ranked& r : ranked) {
    if (r.reader->id == requester) requester_rate = r.rate;
  }
  int64_t freed = pending;
  std::vector<uint64_t> cuts;
  for (const Ranked& r : ranked) {
    if (r.reader->id == requester) break;  // everyone left is faster
    if (requester_rate >= 0 && !(r.rate * kCutRateRatio < requester_rate)) break;  // not slow enough
    cuts.push_back(r.reader->id);
    freed += r.reader->held;
    if (freed >= shortfall) {
      plan.enough = true;
      plan.cuts = std::move(cuts);
      return plan;
    }
  }
  return plan;
}

std::shared_ptr<BodyBudget> BodyBudget::create(int64_t total_bytes) {
  return std::shared_ptr<BodyBudget>(new BodyBudget(total_bytes));
}

bool BodyBudget::take(int64_t bytes) {
  int64_t used = used_bytes_.load();
  do {
    if (used + bytes > total_bytes_) return false;
  } while (!used_bytes_.compare_exchange_weak(used, used + bytes));
  return true;
}

BodyReservation BodyBudget::try_reserve(int64_t bytes) {
  if (bytes <= 0 || !take(bytes)) return {};
  return BodyReservation(shared_from_this(), bytes);
}

BodyReservation BodyBudget::open() { return BodyReservation(shared_from_this(), 0); }

uint64_t BodyBudget::begin_reading(Clock::time_point head_at, std::function<void()> cut) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = ++next_id_;
  Reader& r = readers_[id];
  r.state.id = id;
  r.state.head_at = head_at;
  r.cut = std::move(cut);
  return id;
}

void BodyBudget::note_progress(uint64_t id, int64_t received, int64_t held) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = readers_.find(id);
  if (it == readers_.end()) return;
  it->second.state.received = received;
  it->second.state.held = held;
}

void BodyBudget::end_reading(uint64_t id) {
  std::function<void()> cut;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = readers_.find(id);
  if (it == readers_.end()) return;
  cut = std::move(it->second.cut);
  readers_.erase(it);
}

BodyBudget::Room BodyBudget::make_room(int64_t bytes, uint64_t requester, Clock::time_point now) {
  std::vector<std::function<void()>> to_cut;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const int64_t free_now = total_bytes_ - used_bytes_.load();
    if (free_now >= bytes) return Room::kRetry;  // freed since the caller tried
    int64_t pending = 0;
    std::vector<BodyReader> states;
    states.reserve(readers_.size());
    for (const auto& [id, r] : readers_) {
      if (r.state.cut) pending += r.state.held;
      states.push_back(r.state);
    }
    const CutPlan plan = plan_cuts(states, bytes - free_now, pending, requester, now);
    if (!plan.enough) return Room::kRefuse;
    for (uint64_t id : plan.cuts) {
      Reader& r = readers_.at(id);
      r.state.cut = true;
      if (r.cut) to_cut.push_back(r.cut);
      ++cuts_;
    }
  }
  for (auto& cut : to_cut) cut();
  return Room::kRetry;
}

std::vector<BodyReader> BodyBudget::readers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<BodyReader> out;
  for (const auto& [id, r] : readers_) out.push_back(r.state);
  return out;
}

uint64_t BodyBudget::cuts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cuts_;
}

int64_t body_budget_bytes(const ApiConfig& config) {
  if (config.max_body_bytes_in_flight > 0) return config.max_body_bytes_in_flight;
  return std::max(body_reservation_bytes(config.payload_limit_bytes),
                  body_reservation_bytes(kTypicalBodyBytes) * std::max(config.max_connections, 1));
}

int64_t connection_buffer_bytes(const ApiConfig& config) {
  return config.max_header_bytes + kReadChunkBytes + kStreamWriteBytes + kSessionStateBytes;
}

int64_t transport_worst_case_bytes(const ApiConfig& config, int64_t max_concurrent_requests) {
  return body_budget_bytes(config) + connection_buffer_bytes(config) * config.max_connections +
         config.stream_queue_bytes * max_concurrent_requests;
}

}  // namespace plimsoll::api
