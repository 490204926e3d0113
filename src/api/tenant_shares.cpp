// The shares' arithmetic: reserves from the weights, the limit from what the
// others hold.
#include "api/tenant_shares.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "api/api_config.h"

namespace plimsoll::api {

size_t TenantSet::index(int32_t tenant) const {
  return tenant >= 0 && static_cast<size_t>(tenant) < size() ? static_cast<size_t>(tenant) : 0;
}

std::string TenantSet::label(int32_t tenant) const {
  const size_t t = index(tenant);
  return fmt::format("tenant '{}'", t < names.size() ? names[t] : std::string("default"));
}

TenantSet tenant_set(const ApiConfig& config) { return TenantSet{config.tenant_names, config.tenant_weights}; }

TenantShares::TenantShares(int64_t capacity, const std::vector<double>& weights, int64_t reservable)
    : capacity_(std::max<int64_t>(capacity, 0)) {
  const size_t n = std::max<size_t>(weights.size(), 1);
  reserves_.assign(n, 0);
  if (n == 1) return;
  const int64_t pool = std::clamp<int64_t>(reservable < 0 ? capacity_ : reservable, 0, capacity_);
  double total = 0;
  for (double w : weights) total += w > 0 ? w : 1.0;
  const bool at_least_one = pool >= 2 * static_cast<int64_t>(n);
  for (size_t t = 0; t < n; ++t) {
    const double w = weights[t] > 0 ? weights[t] : 1.0;
    const auto half_share = static_cast<int64_t>(static_cast<double>(pool) * w / total / 2.0);
    reserves_[t] = at_least_one ? std::max<int64_t>(half_share, 1) : half_share;
  }
}

int64_t TenantShares::limit(size_t t, const std::vector<int64_t>& used) const {
  int64_t held_by_others = 0;
  for (size_t j = 0; j < reserves_.size(); ++j) {
    if (j == t) continue;
    const int64_t u = j < used.size() ? used[j] : 0;
    held_by_others += std::max(u, reserves_[j]);
  }
  return std::max<int64_t>(capacity_ - held_by_others, 0);
}

bool TenantShares::fits(size_t t, int64_t n, const std::vector<int64_t>& used) const {
  const int64_t mine = t < used.size() ? used[t] : 0;
  return mine + n <= limit(t, used);
}

std::vector<int64_t> TenantRefusals::snapshot() const {
  std::vector<int64_t> out;
  out.reserve(counts_.size());
  for (const auto& c : counts_) out.push_back(c.load());
  return out;
}

}  // namespace plimsoll::api
