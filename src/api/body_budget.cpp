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
      bytes_(std::exchange(other.bytes_, 0)),
      tenant_(other.tenant_) {}

BodyReservation& BodyReservation::operator=(BodyReservation&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::move(other.budget_);
    bytes_ = std::exchange(other.bytes_, 0);
    tenant_ = other.tenant_;
  }
  return *this;
}

bool BodyReservation::try_grow(int64_t bytes) {
  if (bytes <= 0) return true;
  if (!budget_ || !budget_->take(bytes, tenant_)) return false;
  bytes_ += bytes;
  return true;
}

void BodyReservation::shrink(int64_t bytes) {
  bytes = std::min(bytes, bytes_);
  if (bytes <= 0 || !budget_) return;
  budget_->give_back(bytes, tenant_);
  bytes_ -= bytes;
}

void BodyReservation::release() {
  if (budget_ && bytes_ > 0) budget_->give_back(bytes_, tenant_);
  budget_.reset();
  bytes_ = 0;
}

double receive_rate(const BodyReader& reader, std::chrono::steady_clock::time_point now) {
  const double seconds =
      std::max(std::chrono::duration<double>(now - reader.head_at).count(), 1e-3);
  return static_cast<double>(reader.received) / seconds;
}

namespace {

struct Ranked {
  double rate;
  const BodyReader* reader;
};

// The readers a cut may be asked of, slowest first (ties: the older head),
// and the requester's rate (-1: no reader, a body already read).
std::vector<Ranked> rank_readers(const std::vector<BodyReader>& readers, uint64_t requester,
                                 std::chrono::steady_clock::time_point now, double* requester_rate) {
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
  *requester_rate = -1;
  for (const Ranked& r : ranked) {
    if (r.reader->id == requester) *requester_rate = r.rate;
  }
  return ranked;
}

}  // namespace

CutPlan plan_cuts(const std::vector<BodyReader>& readers, int64_t shortfall, int64_t pending, uint64_t requester,
                  std::chrono::steady_clock::time_point now) {
  // One tenant whose budget is the shortfall and who holds all of it less
  // what is on its way back: the cuts must free the rest.
  return plan_cuts(readers, TenantShares(shortfall, {}), {shortfall - pending}, 0, shortfall, requester, now);
}

CutPlan plan_cuts(const std::vector<BodyReader>& readers, const TenantShares& shares, std::vector<int64_t> used,
                  size_t tenant, int64_t bytes, uint64_t requester, std::chrono::steady_clock::time_point now) {
  CutPlan plan;
  used.resize(shares.tenants(), 0);
  tenant = tenant < used.size() ? tenant : 0;
  const auto room = [&] { return shares.limit(tenant, used) - used[tenant]; };
  if (room() >= bytes) {
    plan.enough = true;
    return plan;
  }
  double requester_rate = -1;
  const std::vector<Ranked> ranked = rank_readers(readers, requester, now, &requester_rate);
  std::vector<uint64_t> cuts;
  for (const Ranked& r : ranked) {
    if (r.reader->id == requester) break;  // everyone left is faster
    if (requester_rate >= 0 && !(r.rate * kCutRateRatio < requester_rate)) break;  // not slow enough
    const size_t owner = r.reader->tenant < used.size() ? r.reader->tenant : 0;
    const int64_t before = room();
    used[owner] -= r.reader->held;
    if (room() <= before) {  // another tenant's bytes within its reserve: no room for this one
      used[owner] += r.reader->held;
      continue;
    }
    cuts.push_back(r.reader->id);
    if (room() >= bytes) {
      plan.enough = true;
      plan.cuts = std::move(cuts);
      return plan;
    }
  }
  return plan;
}

BodyBudget::BodyBudget(int64_t total_bytes, const std::vector<double>& weights, int64_t reservable_bytes)
    : total_bytes_(total_bytes),
      shares_(total_bytes, weights, reservable_bytes),
      tenant_used_(shares_.tenants(), 0) {}

std::shared_ptr<BodyBudget> BodyBudget::create(int64_t total_bytes, const std::vector<double>& tenant_weights,
                                               int64_t reservable_bytes) {
  return std::shared_ptr<BodyBudget>(new BodyBudget(total_bytes, tenant_weights, reservable_bytes));
}

bool BodyBudget::take(int64_t bytes, size_t tenant) {
  std::lock_guard<std::mutex> lock(mutex_);
  // (fits: within the tenant's share, which is within the budget)
  if (!shares_.fits(tenant, bytes, tenant_used_)) return false;
  tenant_used_[tenant] += bytes;
  used_bytes_.fetch_add(bytes);
  return true;
}

void BodyBudget::give_back(int64_t bytes, size_t tenant) {
  std::lock_guard<std::mutex> lock(mutex_);
  tenant_used_[tenant] -= bytes;
  used_bytes_.fetch_sub(bytes);
}

int64_t BodyBudget::tenant_used_bytes(size_t tenant) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tenant < tenant_used_.size() ? tenant_used_[tenant] : 0;
}

int64_t BodyBudget::tenant_limit_bytes(size_t tenant) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return shares_.limit(tenant < tenant_used_.size() ? tenant : 0, tenant_used_);
}

BodyReservation BodyBudget::try_reserve(int64_t bytes, size_t tenant) {
  tenant = tenant < shares_.tenants() ? tenant : 0;
  if (bytes <= 0 || !take(bytes, tenant)) return {};
  return BodyReservation(shared_from_this(), bytes, tenant);
}

BodyReservation BodyBudget::open(size_t tenant) {
  return BodyReservation(shared_from_this(), 0, tenant < shares_.tenants() ? tenant : 0);
}

uint64_t BodyBudget::begin_reading(Clock::time_point head_at, std::function<void()> cut, size_t tenant) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = ++next_id_;
  Reader& r = readers_[id];
  r.state.id = id;
  r.state.head_at = head_at;
  r.state.tenant = tenant < shares_.tenants() ? tenant : 0;
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

BodyBudget::Room BodyBudget::make_room(int64_t bytes, uint64_t requester, Clock::time_point now, size_t tenant) {
  std::vector<std::function<void()>> to_cut;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tenant = tenant < shares_.tenants() ? tenant : 0;
    // What each tenant holds, less what its readers already cut hold (on its way back).
    std::vector<int64_t> used = tenant_used_;
    std::vector<BodyReader> states;
    states.reserve(readers_.size());
    for (const auto& [id, r] : readers_) {
      if (r.state.cut) used[r.state.tenant] -= r.state.held;
      states.push_back(r.state);
    }
    if (shares_.fits(tenant, bytes, tenant_used_)) return Room::kRetry;  // freed since the caller tried
    const CutPlan plan = plan_cuts(states, shares_, std::move(used), tenant, bytes, requester, now);
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
  const int64_t one_largest = body_reservation_bytes(config.payload_limit_bytes);
  const int64_t typical = body_reservation_bytes(kTypicalBodyBytes) * std::max(config.max_connections, 1);
  if (config.tenant_names.size() > 1) return one_largest + typical;
  return std::max(one_largest, typical);
}

int64_t body_reservable_bytes(const ApiConfig& config) {
  return std::max<int64_t>(body_budget_bytes(config) - body_reservation_bytes(config.payload_limit_bytes), 0);
}

int64_t connection_buffer_bytes(const ApiConfig& config) {
  return config.max_header_bytes + kReadChunkBytes + kStreamWriteBytes + kSessionStateBytes;
}

int64_t transport_worst_case_bytes(const ApiConfig& config, int64_t max_concurrent_requests) {
  return body_budget_bytes(config) + connection_buffer_bytes(config) * config.max_connections +
         config.stream_queue_bytes * max_concurrent_requests;
}

}  // namespace plimsoll::api
