// BodyBudget: the byte budget for request bodies in flight
// (--max-body-bytes-in-flight). Nothing is reserved for a declared length:
// the transport charges a body's bytes as they arrive (its buffer grows in
// steps, each reserved before it is allocated), and parse_request_json
// charges the JSON tree as it is built, both through the one reservation the
// request holds; the reservation is returned when the route is done with the
// body or the handler returns, whichever comes first.
//
// When a body's next step cannot be reserved, the bodies still being read
// are ranked by how fast they arrive (bytes received / time since their
// head): the slowest that hold bytes are cut first (closed) to make room,
// only those several times slower than the requester (kCutRateRatio); when
// they cannot make room the requester is answered 429 instead.
// So idle or trickling connections hold almost nothing and give it back to
// the first body that needs it.
//
// With tenants (--tenants) the budget is shared by them (api/tenant_shares.h):
// a tenant's bodies in flight hold at most its share (the budget less the
// others' use and their unused reserves; the reserves come from the budget
// beyond one largest body). A body short of its tenant's share cuts only
// bodies whose cut makes room for that tenant (its own, or another tenant's
// beyond that tenant's reserve), else gets the 429.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "api/request_json.h"  // kJsonTreeBytesPerBodyByte, json_tree_limit_bytes
#include "api/tenant_shares.h"

namespace plimsoll::api {

struct ApiConfig;

// A body still arriving is cut for another only when it arrives this many
// times slower (bodies of like speed, such as several uploads at once, wait
// for each other or get 429 instead of cutting each other).
inline constexpr double kCutRateRatio = 4.0;
// A body's buffer starts at this size (or its length, if smaller) and
// doubles as bytes arrive, up to its Content-Length.
inline constexpr int64_t kBodyFirstStepBytes = 16 * 1024;
// The JSON tree is charged in steps of this size (or what is left under its
// per-body cap, if smaller).
inline constexpr int64_t kTreeChargeStepBytes = 64 * 1024;
// What the default budget holds for each open connection at once: a body of
// this size with its worst-case tree (body_reservation_bytes).
inline constexpr int64_t kTypicalBodyBytes = 4 * 1024;

// The most one body of `content_length` bytes can reserve: the body and the
// largest JSON tree parse_request_json lets it build.
int64_t body_reservation_bytes(int64_t content_length);

class BodyBudget;

// Moves, never copies; returns its bytes on release() or destruction. Used
// from one thread at a time.
class BodyReservation {
 public:
  BodyReservation() = default;
  BodyReservation(BodyReservation&& other) noexcept;
  BodyReservation& operator=(BodyReservation&& other) noexcept;
  BodyReservation(const BodyReservation&) = delete;
  BodyReservation& operator=(const BodyReservation&) = delete;
  ~BodyReservation() { release(); }

  // Takes `bytes` more from its budget; false (nothing taken) when they are
  // not free now, or the reservation has no budget (default-constructed or
  // released).
  bool try_grow(int64_t bytes);
  // Gives `bytes` of it back now (at most what it holds).
  void shrink(int64_t bytes);
  // Returns everything and detaches from the budget (try_grow fails after it).
  void release();
  int64_t bytes() const { return bytes_; }
  size_t tenant() const { return tenant_; }
  const std::shared_ptr<BodyBudget>& budget() const { return budget_; }

 private:
  friend class BodyBudget;
  BodyReservation(std::shared_ptr<BodyBudget> budget, int64_t bytes, size_t tenant)
      : budget_(std::move(budget)), bytes_(bytes), tenant_(tenant) {}

  std::shared_ptr<BodyBudget> budget_;
  int64_t bytes_ = 0;
  size_t tenant_ = 0;
};

// One body being read, as the victim choice sees it.
struct BodyReader {
  uint64_t id = 0;
  int64_t received = 0;  // bytes arrived since its head (including any not yet charged)
  int64_t held = 0;      // bytes its reservation holds
  std::chrono::steady_clock::time_point head_at;
  bool cut = false;      // already chosen; its bytes come back when its connection closes
  size_t tenant = 0;     // whose body it is
};

// Arrival rate in bytes per second since the head (elapsed floored at 1 ms).
double receive_rate(const BodyReader& reader, std::chrono::steady_clock::time_point now);

struct CutPlan {
  bool enough = false;          // the cuts (maybe none) make room for the shortfall
  std::vector<uint64_t> cuts;   // empty unless enough
};

// Which readers to cut so that `shortfall` more bytes come free, given that
// `pending` bytes of readers already cut are on their way back: the slowest
// holding bytes first (ties: the older head), only those kCutRateRatio times
// slower than `requester` (0: the requester is no reader but a body already
// read, and outranks them all). Not enough: no cuts.
CutPlan plan_cuts(const std::vector<BodyReader>& readers, int64_t shortfall, int64_t pending, uint64_t requester,
                  std::chrono::steady_clock::time_point now);
// The same for a tenant's `bytes` under `shares`, `used` being what each
// tenant holds less what its readers already cut hold: enough when
// shares.fits(tenant, bytes, used) after the cuts. A reader (of any tenant,
// same order and speed rule) is cut only when that makes room for `tenant`:
// its own bodies, or another tenant's held beyond that tenant's reserve.
CutPlan plan_cuts(const std::vector<BodyReader>& readers, const TenantShares& shares, std::vector<int64_t> used,
                  size_t tenant, int64_t bytes, uint64_t requester, std::chrono::steady_clock::time_point now);

class BodyBudget : public std::enable_shared_from_this<BodyBudget> {
 public:
  using Clock = std::chrono::steady_clock;
  // `tenant_weights`: one per tenant (empty: one tenant, who may use it
  // all); `reservable_bytes`: the part of the budget the tenants' reserves
  // come from (< 0: all of it).
  static std::shared_ptr<BodyBudget> create(int64_t total_bytes, const std::vector<double>& tenant_weights = {},
                                            int64_t reservable_bytes = -1);

  // A reservation of `bytes` for `tenant`, or an empty one (bytes() == 0)
  // when they are not free now (or not within the tenant's share).
  BodyReservation try_reserve(int64_t bytes, size_t tenant = 0);
  // An empty reservation on this budget for `tenant`, to grow with try_grow.
  BodyReservation open(size_t tenant = 0);
  int64_t total_bytes() const { return total_bytes_; }
  int64_t used_bytes() const { return used_bytes_.load(); }
  size_t tenants() const { return shares_.tenants(); }
  // What `tenant`'s reservations hold now, and the most they may hold now.
  int64_t tenant_used_bytes(size_t tenant) const;
  int64_t tenant_limit_bytes(size_t tenant) const;

  // --- bodies being read ---------------------------------------------------
  // Registers a body whose head arrived at `head_at`; `cut` closes its
  // connection (any thread; it must not call back into the budget
  // synchronously). Returns its id (never 0).
  uint64_t begin_reading(Clock::time_point head_at, std::function<void()> cut, size_t tenant = 0);
  // Its bytes arrived so far and the bytes its reservation holds.
  void note_progress(uint64_t id, int64_t received, int64_t held);
  // The body is read, or its connection is gone (its reservation returned or
  // passed on).
  void end_reading(uint64_t id);

  enum class Room {
    kRetry,   // room is on its way (readers cut, or cut before): try again shortly
    kRefuse,  // only faster bodies or bodies already read hold the budget: answer 429
  };
  // After `bytes` could not be reserved for `tenant`: make room for them by
  // cutting the slowest readers (plan_cuts), calling their `cut` outside the lock.
  Room make_room(int64_t bytes, uint64_t requester, Clock::time_point now = Clock::now(), size_t tenant = 0);

  std::vector<BodyReader> readers() const;
  uint64_t cuts() const;

 private:
  friend class BodyReservation;
  BodyBudget(int64_t total_bytes, const std::vector<double>& weights, int64_t reservable_bytes);
  bool take(int64_t bytes, size_t tenant);
  void give_back(int64_t bytes, size_t tenant);

  struct Reader {
    BodyReader state;
    std::function<void()> cut;
  };

  const int64_t total_bytes_;
  const TenantShares shares_;
  std::atomic<int64_t> used_bytes_{0};  // the sum of tenant_used_, readable without the lock
  mutable std::mutex mutex_;
  std::vector<int64_t> tenant_used_;  // per tenant
  std::map<uint64_t, Reader> readers_;
  uint64_t next_id_ = 0;
  uint64_t cuts_ = 0;
};

// The budget in force: ApiConfig::max_body_bytes_in_flight, or when 0 the
// larger of one payload-limit body with its worst-case tree and
// max_connections x a typical body (kTypicalBodyBytes) with its worst-case
// tree; with several tenants, their sum (so the reserves, drawn from what is
// beyond one largest body, are not nothing). Bodies charge what they hold,
// not their worst case, so many more than that are read at once.
int64_t body_budget_bytes(const ApiConfig& config);
// The part of the budget the tenants' reserves come from: what is beyond
// one payload-limit body with its tree, so that with the others idle any
// tenant can send the largest body.
int64_t body_reservable_bytes(const ApiConfig& config);

// Bytes one open connection can hold in the transport, whatever it sends:
// its read buffer (the head limit + one read) and the session's fixed state.
int64_t connection_buffer_bytes(const ApiConfig& config);

// The transport's own worst case, for the memory plan: the body budget +
// connection_buffer_bytes x max_connections + stream_queue_bytes x the
// submissions that can be in flight (`max_concurrent_requests`).
int64_t transport_worst_case_bytes(const ApiConfig& config, int64_t max_concurrent_requests);

}  // namespace plimsoll::api
