// Admission: per-item checks, the charge of a submission, and the in-flight
// counts it is held against.
#include "sched/admission.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/bytes.h"
#include "engine/grammar/grammar.h"
#include "kv/block_pool.h"

namespace plimsoll::sched {
namespace {

Rejection reject(ErrorCode code, std::string message, double retry_after = 0) {
  return Rejection{Error{code, std::move(message)}, retry_after};
}

std::string fmt_share(double share) {
  std::ostringstream out;
  out << share;
  return out.str();
}

std::string bytes_text(int64_t bytes) { return std::to_string(bytes) + " bytes (" + format_bytes(bytes) + ")"; }

}  // namespace

std::optional<Rejection> Admission::check_items(const std::vector<GenerationRequest>& items) const {
  const AdmissionLimits& lim = limits_;
  if (items.empty()) return reject(ErrorCode::kInvalidArgument, "no inputs given");
  for (size_t i = 0; i < items.size(); ++i) {
    const GenerationRequest& r = items[i];
    const std::string where = items.size() > 1 ? "input " + std::to_string(i) + ": " : "";
    const int64_t n_in = static_cast<int64_t>(r.prompt_ids.size());
    if (n_in == 0) return reject(ErrorCode::kInvalidArgument, where + "the input is empty");
    if (Status st = r.params.validate(); !st.ok()) return reject(ErrorCode::kInvalidArgument, where + st.error().message);
    if (r.params.max_new_tokens < 1) {
      return reject(ErrorCode::kInvalidArgument, where + "`max_new_tokens` must be strictly positive");
    }
    if (r.params.grammar && r.params.max_new_tokens < r.params.grammar->min_output_bytes()) {
      // The mask counts one byte per token at worst: a shorter budget could end mid-value.
      return reject(ErrorCode::kInvalidArgument,
                    where + "`max_new_tokens` of " + std::to_string(r.params.max_new_tokens) +
                        " is too small for the grammar: its shortest output takes up to " +
                        std::to_string(r.params.grammar->min_output_bytes()) + " tokens");
    }
    if (n_in > lim.max_input_tokens) {
      return reject(ErrorCode::kInvalidArgument, where + "`inputs` must have less than " +
                                                     std::to_string(lim.max_input_tokens + 1) +
                                                     " tokens. Given: " + std::to_string(n_in));
    }
    if (n_in + r.params.max_new_tokens > lim.max_total_tokens) {
      return reject(ErrorCode::kInvalidArgument,
                    where + "`inputs` tokens + `max_new_tokens` must be <= " + std::to_string(lim.max_total_tokens) +
                        ". Given: " + std::to_string(n_in) + " `inputs` tokens and " +
                        std::to_string(r.params.max_new_tokens) + " `max_new_tokens`");
    }
    const int64_t need = blocks_for_tokens(n_in + r.params.max_new_tokens, lim.block_tokens);
    if (need > lim.kv_blocks) {
      return reject(ErrorCode::kOutOfMemory,
                    where + "needs " + std::to_string(need) + " KV blocks but the whole pool has " +
                        std::to_string(lim.kv_blocks) + "; it can never fit");
    }
    if (r.tenant >= 0 && static_cast<size_t>(r.tenant) < lim.tenants.size()) {
      const TenantLimits& t = lim.tenants[static_cast<size_t>(r.tenant)];
      if (const int64_t cap = tenant_cap_blocks(t, lim.kv_blocks); cap > 0 && need > cap) {
        return reject(ErrorCode::kOutOfMemory,
                      where + "needs " + std::to_string(need) + " KV blocks but tenant \"" + t.name +
                          "\" may hold " + std::to_string(cap) + " (max_kv_share " + fmt_share(t.max_kv_share) +
                          " of " + std::to_string(lim.kv_blocks) + "); it can never fit");
      }
    }
  }
  return std::nullopt;
}

Admission::Admission(AdmissionLimits limits) : limits_(std::move(limits)) {
  limits_.tenants = with_default_tenant(std::move(limits_.tenants));
  tenant_tokens_.assign(limits_.tenants.size(), 0);
  tenant_refusals_.assign(limits_.tenants.size(), 0);
}

std::optional<Rejection> Admission::memory_pressure_refusal() const {
  return limits_.memory_pressure ? limits_.memory_pressure() : std::nullopt;
}

double Admission::retry_after_seconds(double drain_tokens_per_second) const {
  const double rate = std::max(1.0, drain_tokens_per_second);
  return std::clamp(std::ceil(static_cast<double>(in_flight_tokens_) / rate), 1.0, 60.0);
}

std::optional<Rejection> Admission::check_bytes(int64_t bytes, const std::string& what, double retry_after,
                                                bool check_pressure) const {
  const AdmissionLimits& lim = limits_;
  if (!accepting_) return reject(ErrorCode::kUnavailable, "the server is shutting down");
  if (bytes > lim.request_budget_bytes) {
    return reject(ErrorCode::kOutOfMemory,
                  what + " needs " + std::to_string(bytes) + " bytes of request memory (" + format_bytes(bytes) +
                      "); the plan has " + bytes_text(lim.request_budget_bytes) +
                      ", so it can never fit (send fewer items, fewer tokens or alternatives, or raise "
                      "--max-request-memory)");
  }
  if (check_pressure) {
    if (auto r = memory_pressure_refusal()) return r;
  }
  if (in_flight_bytes_ + bytes > lim.request_budget_bytes) {
    return reject(ErrorCode::kOverloaded,
                  "Model is overloaded: " + what + " needs " + std::to_string(bytes) + " bytes of request memory (" +
                      format_bytes(bytes) + ") and " + bytes_text(in_flight_bytes_) + " of the plan's " +
                      bytes_text(lim.request_budget_bytes) + " are in use",
                  retry_after);
  }
  return std::nullopt;
}

std::optional<Rejection> Admission::check_counts(int64_t tokens, double retry_after) const {
  const AdmissionLimits& lim = limits_;
  if (in_flight_ < lim.max_concurrent_requests && in_flight_tokens_ + tokens <= lim.max_queued_tokens) return std::nullopt;
  return reject(ErrorCode::kOverloaded,
                "Model is overloaded: " + std::to_string(in_flight_) + " requests (limit " +
                    std::to_string(lim.max_concurrent_requests) + ") and " + std::to_string(in_flight_tokens_) +
                    " tokens (limit " + std::to_string(lim.max_queued_tokens) + ") in flight",
                retry_after);
}

std::variant<Admitted, Rejection> Admission::admit(const std::vector<GenerationRequest>& items,
                                                   double drain_tokens_per_second) {
  if (auto r = check_items(items)) return *r;
  const SubmissionCost cost = submission_cost(items, limits_.cost);
  int64_t tokens = 0;
  for (const GenerationRequest& r : items) tokens += static_cast<int64_t>(r.prompt_ids.size()) + r.params.max_new_tokens;
  // A list longer than the whole queue bound enters when the queue is empty.
  tokens = std::min(tokens, limits_.max_queued_tokens);
  std::lock_guard<std::mutex> lock(mu_);
  const double wait = retry_after_seconds(drain_tokens_per_second);
  if (auto r = check_bytes(cost.total(), "this request", wait)) return *r;
  if (auto r = check_counts(tokens, wait)) return *r;
  const int32_t t = items.empty() || items[0].tenant < 0 || static_cast<size_t>(items[0].tenant) >= tenant_tokens_.size()
                        ? 0 : items[0].tenant;
  const TenantLimits& tl = limits_.tenants[static_cast<size_t>(t)];
  // As for the server's bound, a list longer than the tenant's enters when the tenant has none in flight.
  if (tl.max_queued_tokens > 0 && tenant_tokens_[static_cast<size_t>(t)] > 0 &&
      tenant_tokens_[static_cast<size_t>(t)] + tokens > tl.max_queued_tokens) {
    ++tenant_refusals_[static_cast<size_t>(t)];
    return reject(ErrorCode::kOverloaded,
                  "Tenant \"" + tl.name + "\" is at its limit: " + std::to_string(tenant_tokens_[static_cast<size_t>(t)]) +
                      " tokens in flight and this request needs " + std::to_string(tokens) +
                      " more (its max_queued_tokens " + std::to_string(tl.max_queued_tokens) + ", --tenants)",
                  wait);
  }
  Admitted a{next_ticket_++, tokens, cost.total(), take_bytes(cost.total())};
  ++in_flight_;
  in_flight_tokens_ += a.tokens;
  tenant_tokens_[static_cast<size_t>(t)] += a.tokens;
  active_[a.ticket] = Active{a.tokens, t};
  return a;
}

double Admission::fill() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!accepting_ || memory_pressure_refusal()) return 1.0;
  const auto share = [](int64_t used, int64_t limit) {
    return limit > 0 ? static_cast<double>(used) / static_cast<double>(limit) : 1.0;
  };
  const double fullest = std::max({share(in_flight_, limits_.max_concurrent_requests),
                                   share(in_flight_tokens_, limits_.max_queued_tokens),
                                   share(in_flight_bytes_, limits_.request_budget_bytes)});
  return std::clamp(fullest, 0.0, 1.0);
}

void Admission::release(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find(ticket);
  if (it == active_.end()) return;
  --in_flight_;
  in_flight_tokens_ -= it->second.tokens;
  tenant_tokens_[static_cast<size_t>(it->second.tenant)] -= it->second.tokens;
  active_.erase(it);
}

ByteReservation Admission::reserve(int64_t bytes, const std::string& what, BackstopCheck backstop) {
  std::lock_guard<std::mutex> lock(mu_);
  // The request and token bounds are for submissions; a reservation is held to bytes. The
  // backstop refuses here only when asked (kNow); else at the submission that follows.
  const bool check_pressure = backstop == BackstopCheck::kNow;
  if (auto r = check_bytes(bytes, what, 1.0, check_pressure)) return ByteReservation{nullptr, std::move(r)};
  return ByteReservation{take_bytes(bytes), std::nullopt};
}

std::shared_ptr<void> Admission::take_bytes(int64_t bytes) {
  in_flight_bytes_ += bytes;
  // Points at this Admission (never deleted through it): the deleter gives the bytes back.
  return std::shared_ptr<void>(static_cast<void*>(this), [bytes](void* self) {
    static_cast<Admission*>(self)->give_back_bytes(bytes);
  });
}

void Admission::give_back_bytes(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_bytes_ -= bytes;
}

void Admission::stop_accepting() {
  std::lock_guard<std::mutex> lock(mu_);
  accepting_ = false;
}

int64_t Admission::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

int64_t Admission::in_flight_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_bytes_;
}

std::vector<int64_t> Admission::tenant_tokens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tenant_tokens_;
}

std::vector<int64_t> Admission::tenant_refusals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tenant_refusals_;
}

}  // namespace plimsoll::sched
