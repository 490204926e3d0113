// TenantShares: how one capacity (HTTP workers, preparation slots, body
// bytes, busy connections) is shared by the tenants (--tenants) before the
// engine, so that one tenant's slow or heavy requests cannot hold it all.
//
// Each tenant has a reserve: half its weighted share of the reservable
// capacity (rounded down; at least 1 when that capacity is at least 2 units
// per tenant). The rule: tenant t may take `n` more units while
//   used[t] + n <= capacity - sum over the other tenants j of max(used[j], reserve[j])
// i.e. it may use anything except what the others use and the part of their
// reserves they are not using. The reserves sum to at most half the
// capacity, so a tenant inside its reserve always fits. With one tenant
// (no --tenants file) its reserve is irrelevant: it may use all of the
// capacity, as before tenants existed.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace plimsoll::api {

struct ApiConfig;

// The tenants as the HTTP side knows them: index = tenant id, 0 = default.
// Empty: one default tenant of weight 1.
struct TenantSet {
  std::vector<std::string> names;
  std::vector<double> weights;  // > 0; missing ones count as 1

  size_t size() const { return names.empty() ? 1 : names.size(); }
  // A valid tenant id for `tenant` (out of range: the default, 0).
  size_t index(int32_t tenant) const;
  // "tenant '<name>'" for messages.
  std::string label(int32_t tenant) const;
};

TenantSet tenant_set(const ApiConfig& config);

class TenantShares {
 public:
  // `reservable`: the part of `capacity` the reserves are drawn from (the
  // body budget keeps one largest body out of it); < 0: all of it.
  TenantShares(int64_t capacity, const std::vector<double>& weights, int64_t reservable = -1);

  int64_t capacity() const { return capacity_; }
  size_t tenants() const { return reserves_.size(); }
  int64_t reserve(size_t tenant) const { return reserves_[tenant]; }
  // The most tenant `t` may hold given what every tenant holds now (`used`, one per tenant).
  int64_t limit(size_t t, const std::vector<int64_t>& used) const;
  // used[t] + n <= limit(t, used).
  bool fits(size_t t, int64_t n, const std::vector<int64_t>& used) const;

 private:
  int64_t capacity_;
  std::vector<int64_t> reserves_;
};

// Per-tenant counts of requests refused for a tenant's share (any of the
// resources above), for plimsoll_tenant_rejections_total.
class TenantRefusals {
 public:
  explicit TenantRefusals(size_t tenants) : counts_(std::max<size_t>(tenants, 1)) {}
  void add(size_t tenant) { counts_[tenant < counts_.size() ? tenant : 0].fetch_add(1); }
  std::vector<int64_t> snapshot() const;

 private:
  std::vector<std::atomic<int64_t>> counts_;
};

}  // namespace plimsoll::api
