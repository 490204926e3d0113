// Registration of every metric in metrics/names.h into one registry, with
// the planned-memory parts created up front so they render from the start.
#include "metrics/server_metrics.h"

#include "metrics/names.h"

namespace plimsoll::metrics {
namespace {

using names::Name;

Counter& counter(MetricsRegistry& r, Name n) { return r.counter(n.name, n.help); }
Gauge& gauge(MetricsRegistry& r, Name n) { return r.gauge(n.name, n.help); }
template <size_t N>
Histogram& histogram(MetricsRegistry& r, Name n, const std::array<double, N>& bounds) {
  return r.histogram(n.name, n.help, bounds);
}

GaugeFamily& planned_parts(MetricsRegistry& r) {
  GaugeFamily& family =
      r.gauge_family(names::kMemoryPlannedBytes.name, names::kMemoryPlannedBytes.help,
                     {names::kPartLabel});
  for (const char* part : names::kPlanParts) family.labels({part});
  return family;
}

}  // namespace

ServerMetrics::ServerMetrics(MetricsRegistry& r)
    : registry(r),
      request_count(counter(r, names::kRequestCount)),
      request_success(counter(r, names::kRequestSuccess)),
      request_failure(r.counter_family(names::kRequestFailure.name, names::kRequestFailure.help,
                                       {names::kErrLabel})),
      queue_size(gauge(r, names::kQueueSize)),
      batch_current_size(gauge(r, names::kBatchCurrentSize)),
      batch_current_max_tokens(gauge(r, names::kBatchCurrentMaxTokens)),
      batch_max_total_tokens(gauge(r, names::kBatchMaxTotalTokens)),
      request_duration_seconds(histogram(r, names::kRequestDuration, names::kDurationBucketsSeconds)),
      request_queue_duration_seconds(
          histogram(r, names::kRequestQueueDuration, names::kDurationBucketsSeconds)),
      request_inference_duration_seconds(
          histogram(r, names::kRequestInferenceDuration, names::kDurationBucketsSeconds)),
      request_mean_time_per_token_seconds(histogram(
          r, names::kRequestMeanTimePerTokenDuration, names::kTokenLatencyBucketsSeconds)),
      request_generated_tokens(
          histogram(r, names::kRequestGeneratedTokens, names::kTokenCountBuckets)),
      request_input_tokens(histogram(r, names::kRequestInputLength, names::kTokenCountBuckets)),
      memory_budget_bytes(gauge(r, names::kMemoryBudgetBytes)),
      memory_planned_bytes(planned_parts(r)),
      memory_resident_bytes(gauge(r, names::kMemoryResidentBytes)),
      memory_limit_bytes(gauge(r, names::kMemoryLimitBytes)),
      memory_usage_bytes(gauge(r, names::kMemoryUsageBytes)),
      memory_high_water_bytes(gauge(r, names::kMemoryHighWaterBytes)),
      memory_rearm_bytes(gauge(r, names::kMemoryRearmBytes)),
      memory_pressure(gauge(r, names::kMemoryPressure)),
      memory_pressure_trips_total(counter(r, names::kMemoryPressureTripsTotal)),
      kv_blocks_capacity(gauge(r, names::kKvBlocksCapacity)),
      kv_blocks_used(gauge(r, names::kKvBlocksUsed)),
      rejections_total(r.counter_family(names::kRejectionsTotal.name,
                                        names::kRejectionsTotal.help, {names::kReasonLabel})),
      preemptions_total(counter(r, names::kPreemptionsTotal)),
      recomputed_tokens_total(counter(r, names::kRecomputedTokensTotal)),
      engine_faults_total(counter(r, names::kEngineFaultsTotal)),
      prefix_cache_queried_tokens(counter(r, names::kPrefixCacheQueriedTokens)),
      prefix_cache_hit_tokens(counter(r, names::kPrefixCacheHitTokens)),
      prefix_cache_blocks(gauge(r, names::kPrefixCacheBlocks)),
      prefix_cache_reclaimable_blocks(gauge(r, names::kPrefixCacheReclaimableBlocks)),
      prefix_cache_evictions(counter(r, names::kPrefixCacheEvictions)),
      grammar_cache_hits(counter(r, names::kGrammarCacheHits)),
      grammar_cache_misses(counter(r, names::kGrammarCacheMisses)),
      grammar_cache_uncached(counter(r, names::kGrammarCacheUncached)),
      grammar_cache_evictions(counter(r, names::kGrammarCacheEvictions)),
      grammar_cache_bytes(gauge(r, names::kGrammarCacheBytes)),
      grammar_cache_entries(gauge(r, names::kGrammarCacheEntries)),
      tenant_waiting(r.gauge_family(names::kTenantWaiting.name, names::kTenantWaiting.help, {names::kTenantLabel})),
      tenant_running(r.gauge_family(names::kTenantRunning.name, names::kTenantRunning.help, {names::kTenantLabel})),
      tenant_kv_blocks(r.gauge_family(names::kTenantKvBlocks.name, names::kTenantKvBlocks.help, {names::kTenantLabel})),
      tenant_queued_tokens(
          r.gauge_family(names::kTenantQueuedTokens.name, names::kTenantQueuedTokens.help, {names::kTenantLabel})),
      tenant_served_tokens(
          r.counter_family(names::kTenantServedTokens.name, names::kTenantServedTokens.help, {names::kTenantLabel})),
      tenant_rejections(
          r.counter_family(names::kTenantRejections.name, names::kTenantRejections.help, {names::kTenantLabel})),
      tenant_weight(r.gauge_family(names::kTenantWeight.name, names::kTenantWeight.help, {names::kTenantLabel})),
      time_to_first_token_seconds(
          histogram(r, names::kTimeToFirstTokenSeconds, names::kDurationBucketsSeconds)),
      inter_token_latency_seconds(
          histogram(r, names::kInterTokenLatencySeconds, names::kTokenLatencyBucketsSeconds)),
      num_requests_waiting(gauge(r, names::kNumRequestsWaiting)),
      num_requests_running(gauge(r, names::kNumRequestsRunning)),
      kv_cache_usage_perc(gauge(r, names::kKvCacheUsagePerc)),
      cache_config_info(r.gauge_family(names::kCacheConfigInfo.name, names::kCacheConfigInfo.help,
                                       {names::kBlockSizeLabel, names::kNumBlocksLabel})) {}

}  // namespace plimsoll::metrics
