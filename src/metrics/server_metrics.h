// ServerMetrics: every metric of metrics/names.h registered once, held as
// references so hot paths (routes, scheduler, memory) only touch atomics.
#pragma once

#include <string>

#include "metrics/registry.h"

namespace plimsoll::metrics {

struct ServerMetrics {
  // Registers (or finds) every family in `registry`, which must outlive this.
  explicit ServerMetrics(MetricsRegistry& registry);

  MetricsRegistry& registry;

  // TGI
  Counter& request_count;
  Counter& request_success;
  CounterFamily& request_failure;  // {err}
  Gauge& queue_size;
  Gauge& batch_current_size;
  Gauge& batch_current_max_tokens;
  Gauge& batch_max_total_tokens;
  Histogram& request_duration_seconds;
  Histogram& request_queue_duration_seconds;
  Histogram& request_inference_duration_seconds;
  Histogram& request_mean_time_per_token_seconds;
  Histogram& request_generated_tokens;
  Histogram& request_input_tokens;

  // Plimsoll
  Gauge& memory_budget_bytes;
  GaugeFamily& memory_planned_bytes;  // {part}: weights, kv, workspace, overhead
  Gauge& memory_resident_bytes;
  Gauge& memory_limit_bytes;
  Gauge& memory_usage_bytes;       // the backstop's figure
  Gauge& memory_high_water_bytes;
  Gauge& memory_rearm_bytes;
  Gauge& memory_pressure;          // 0/1
  Counter& memory_pressure_trips_total;
  Gauge& kv_blocks_capacity;
  Gauge& kv_blocks_used;
  CounterFamily& rejections_total;  // {reason}
  Counter& preemptions_total;
  Counter& recomputed_tokens_total;
  Counter& engine_faults_total;
  Counter& prefix_cache_queried_tokens;
  Counter& prefix_cache_hit_tokens;
  Gauge& prefix_cache_blocks;
  Gauge& prefix_cache_reclaimable_blocks;
  Counter& prefix_cache_evictions;
  Counter& grammar_cache_hits;
  Counter& grammar_cache_misses;
  Counter& grammar_cache_uncached;
  Counter& grammar_cache_evictions;
  Gauge& grammar_cache_bytes;
  Gauge& grammar_cache_entries;
  GaugeFamily& tenant_waiting;        // {tenant}
  GaugeFamily& tenant_running;        // {tenant}
  GaugeFamily& tenant_kv_blocks;      // {tenant}
  GaugeFamily& tenant_queued_tokens;  // {tenant}
  CounterFamily& tenant_served_tokens;  // {tenant}
  CounterFamily& tenant_rejections;   // {tenant}
  GaugeFamily& tenant_weight;         // {tenant}
  Histogram& time_to_first_token_seconds;
  Histogram& inter_token_latency_seconds;

  // The inference extension's model-server protocol
  Gauge& num_requests_waiting;
  Gauge& num_requests_running;
  Gauge& kv_cache_usage_perc;      // 0-1
  GaugeFamily& cache_config_info;  // {block_size, num_gpu_blocks} = 1, set once the plan exists

  // The child for one error type / rejection reason (takes a lock: errors only).
  Counter& failure(const std::string& error_type) { return request_failure.labels({error_type}); }
  Counter& rejection(const std::string& reason) { return rejections_total.labels({reason}); }
};

}  // namespace plimsoll::metrics
