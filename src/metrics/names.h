// Every metric name Plimsoll exports, with its help text and buckets, in one
// place: TGI's names (so dashboards built for TGI work) and the memory story.
#pragma once

#include <array>

namespace plimsoll::metrics::names {

struct Name {
  const char* name;
  const char* help;
};

// --- TGI (text-generation-inference router) names and meanings ---
inline constexpr Name kRequestCount{"tgi_request_count", "Requests received (every generation route)."};
inline constexpr Name kRequestSuccess{"tgi_request_success", "Requests answered successfully."};
inline constexpr Name kRequestFailure{"tgi_request_failure", "Requests that failed, by error_type."};
inline constexpr const char* kErrLabel = "err";
inline constexpr Name kQueueSize{"tgi_queue_size", "Requests waiting in the queue."};
inline constexpr Name kBatchCurrentSize{"tgi_batch_current_size", "Sequences in the running batch."};
inline constexpr Name kBatchCurrentMaxTokens{"tgi_batch_current_max_tokens",
                                             "KV tokens reserved by the running batch."};
inline constexpr Name kBatchMaxTotalTokens{"tgi_batch_max_total_tokens",
                                           "KV tokens the block pool holds at once."};
inline constexpr Name kRequestDuration{"tgi_request_duration",
                                       "Seconds from receiving a request to its last token."};
inline constexpr Name kRequestQueueDuration{"tgi_request_queue_duration",
                                            "Seconds a request waited before its first step."};
inline constexpr Name kRequestInferenceDuration{"tgi_request_inference_duration",
                                                "Seconds from a request's first step to its end."};
inline constexpr Name kRequestMeanTimePerTokenDuration{
    "tgi_request_mean_time_per_token_duration", "Inference seconds per generated token."};
inline constexpr Name kRequestGeneratedTokens{"tgi_request_generated_tokens",
                                              "Tokens generated per request."};
inline constexpr Name kRequestInputLength{"tgi_request_input_length", "Prompt tokens per request."};

// --- Plimsoll: the memory plan and what admission control did with it ---
inline constexpr Name kMemoryBudgetBytes{"plimsoll_memory_budget_bytes",
                                         "Memory the server plans within (cgroup limit or --memory-limit)."};
inline constexpr Name kMemoryPlannedBytes{"plimsoll_memory_planned_bytes",
                                          "Planned bytes per part of the memory plan."};
inline constexpr const char* kPartLabel = "part";
inline constexpr std::array<const char*, 4> kPlanParts{"weights", "kv", "workspace", "overhead"};
inline constexpr Name kMemoryResidentBytes{"plimsoll_memory_resident_bytes",
                                           "Resident set size of the process."};
// The memory backstop (memory/memory_watcher.h).
inline constexpr Name kMemoryLimitBytes{"plimsoll_memory_limit_bytes",
                                        "Memory limit found (--memory-limit, cgroup or physical memory)."};
inline constexpr Name kMemoryUsageBytes{
    "plimsoll_memory_usage_bytes",
    "Usage the memory backstop watches: the limiting cgroup's working set, else the process RSS."};
inline constexpr Name kMemoryHighWaterBytes{"plimsoll_memory_high_water_bytes",
                                            "Usage at or above which new requests are refused (429)."};
inline constexpr Name kMemoryRearmBytes{"plimsoll_memory_rearm_bytes",
                                        "Usage below which requests are admitted again after a trip."};
inline constexpr Name kMemoryPressure{"plimsoll_memory_pressure",
                                      "1 while the memory backstop refuses new requests, else 0."};
inline constexpr Name kMemoryPressureTripsTotal{"plimsoll_memory_pressure_trips_total",
                                                "Times usage reached the high-water mark."};
// Not `plimsoll_kv_blocks_total`: promlint reserves `_total` for counters.
inline constexpr Name kKvBlocksCapacity{"plimsoll_kv_blocks_capacity", "KV-cache blocks in the pool."};
inline constexpr Name kKvBlocksUsed{"plimsoll_kv_blocks_used", "KV-cache blocks in use."};
inline constexpr Name kRejectionsTotal{"plimsoll_rejections_total",
                                       "Submissions refused before any token, by reason."};
inline constexpr const char* kReasonLabel = "reason";
inline constexpr Name kPreemptionsTotal{"plimsoll_preemptions_total",
                                        "Sequences preempted to give a slot or KV blocks to another."};
inline constexpr Name kRecomputedTokensTotal{"plimsoll_recomputed_tokens_total",
                                             "Tokens whose K/V were computed again after a preemption gave "
                                             "their blocks back (a preemption for a slot alone keeps them)."};
inline constexpr Name kEngineFaultsTotal{"plimsoll_engine_faults_total",
                                         "Faults (exceptions, failed steps) contained on the engine thread; "
                                         "the requests they hit ended with an error."};
// The prefix cache (kv/block_pool.h): prompts' leading full blocks shared between requests.
inline constexpr Name kPrefixCacheQueriedTokens{"plimsoll_prefix_cache_queried_tokens_total",
                                                "Prompt tokens of admitted sequences looked up in the prefix cache."};
inline constexpr Name kPrefixCacheHitTokens{"plimsoll_prefix_cache_hit_tokens_total",
                                            "Prompt tokens found in the prefix cache (not computed again)."};
inline constexpr Name kPrefixCacheBlocks{"plimsoll_prefix_cache_blocks",
                                         "KV blocks the prefix cache holds, in use or not."};
inline constexpr Name kPrefixCacheReclaimableBlocks{
    "plimsoll_prefix_cache_reclaimable_blocks",
    "Cached KV blocks no request uses: counted free, evicted least recently used first when the pool needs them."};
inline constexpr Name kPrefixCacheEvictions{"plimsoll_prefix_cache_evictions_total",
                                            "Cached KV blocks evicted to make room."};
// The grammar cache (engine/grammar/grammar_cache.h): compiled grammars shared by requests.
inline constexpr Name kGrammarCacheHits{"plimsoll_grammar_cache_hits_total",
                                        "Constrained requests whose grammar was in the grammar cache (not compiled)."};
inline constexpr Name kGrammarCacheMisses{"plimsoll_grammar_cache_misses_total",
                                          "Constrained requests that compiled their grammar."};
inline constexpr Name kGrammarCacheUncached{
    "plimsoll_grammar_cache_uncached_total",
    "Compiled grammars that found no room in the grammar cache (held by pinned grammars): charged to their "
    "request's memory instead."};
inline constexpr Name kGrammarCacheEvictions{"plimsoll_grammar_cache_evictions_total",
                                             "Grammars no request used, evicted from the cache to make room."};
inline constexpr Name kGrammarCacheBytes{"plimsoll_grammar_cache_bytes",
                                         "Bytes the grammar cache's entries are charged (each its whole lazy budget), "
                                         "at most --grammar-cache-memory."};
inline constexpr Name kGrammarCacheEntries{"plimsoll_grammar_cache_entries", "Grammars the grammar cache holds."};
// Tenants (--tenants; sched/tenants.h): label values are the tenants file's names, never a request's.
inline constexpr const char* kTenantLabel = "tenant";
inline constexpr Name kTenantWaiting{"plimsoll_tenant_waiting_sequences",
                                     "Sequences of the tenant waiting for KV blocks (fed in from its submissions)."};
inline constexpr Name kTenantRunning{"plimsoll_tenant_running_sequences", "Sequences of the tenant holding KV blocks."};
inline constexpr Name kTenantKvBlocks{"plimsoll_tenant_kv_blocks", "KV blocks the tenant's sequences hold."};
inline constexpr Name kTenantQueuedTokens{"plimsoll_tenant_queued_tokens",
                                          "Prompt + max_new tokens of the tenant's requests in flight (its "
                                          "max_queued_tokens bounds it)."};
inline constexpr Name kTenantServedTokens{"plimsoll_tenant_served_tokens_total",
                                          "Prompt and generated tokens computed for the tenant."};
inline constexpr Name kTenantRejections{"plimsoll_tenant_rejections_total",
                                        "Requests refused (429) because the tenant was at its own max_queued_tokens or held its "
                                        "share of the HTTP workers, preparation pool, body budget or connections."};
inline constexpr Name kTenantWeight{"plimsoll_tenant_weight", "The tenant's weight in the fair share."};
inline constexpr Name kTimeToFirstTokenSeconds{"plimsoll_time_to_first_token_seconds",
                                               "Seconds from receiving a request to its first token."};
inline constexpr Name kInterTokenLatencySeconds{"plimsoll_inter_token_latency_seconds",
                                                "Seconds between consecutive tokens of a sequence."};

// --- The Gateway API Inference Extension's model-server protocol (its
// docs/proposals/003-model-server-protocol): what its endpoint picker scrapes to
// route. vLLM's names with Plimsoll's prefix; the picker is pointed at them by its
// core-metrics-extractor's engineConfigs (deploy/kubernetes/overlays/inference-gateway).
inline constexpr Name kNumRequestsWaiting{
    "plimsoll_num_requests_waiting",
    "Requests admitted and waiting for the running batch (the protocol's TotalQueuedRequests)."};
inline constexpr Name kNumRequestsRunning{"plimsoll_num_requests_running",
                                          "Requests in the running batch (the protocol's TotalRunningRequests)."};
inline constexpr Name kKvCacheUsagePerc{
    "plimsoll_kv_cache_usage_perc",
    "0-1, the protocol's KVCacheUtilization as admission sees it: the largest share of admission's bounds in "
    "use (KV tokens of admitted requests over --max-queued-tokens, requests, request memory); 1 while it "
    "refuses everything. At 1 a new request is answered 429."};
inline constexpr Name kCacheConfigInfo{"plimsoll_cache_config_info",
                                       "Always 1: the KV cache's block size in tokens and its number of blocks "
                                       "(labels as vLLM's vllm:cache_config_info)."};
inline constexpr const char* kBlockSizeLabel = "block_size";
inline constexpr const char* kNumBlocksLabel = "num_gpu_blocks";  // vLLM's label name; here host-memory blocks

// --- Buckets ---
// Request-level durations: 1 ms .. ~9 min, doubling.
inline constexpr std::array<double, 20> kDurationBucketsSeconds{
    0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512,
    1.024, 2.048, 4.096, 8.192, 16.384, 32.768, 65.536, 131.072, 262.144, 524.288};
// Per-token latencies: 0.5 ms .. ~16 s.
inline constexpr std::array<double, 16> kTokenLatencyBucketsSeconds{
    0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064,
    0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384};
// Token counts: 1 .. 131072, powers of two.
inline constexpr std::array<double, 18> kTokenCountBuckets{
    1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};

}  // namespace plimsoll::metrics::names
