// From flags to a ready engine: load the model and tokenizer, find the memory
// budget, make the plan, then allocate exactly what it says (KV pool, step
// workspace) and warm up. Shared by `serve` and `bench`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/result.h"
#include "core/thread_pool.h"
#include "engine/batch_engine.h"
#include "engine/grammar/token_trie.h"
#include "formats/model_file.h"
#include "memory/memory_budget.h"
#include "memory/memory_plan.h"
#include "tokenizer/tokenizer_loading.h"

namespace plimsoll {

struct ServeConfig;

// --grammar-cache-memory's default: room for three grammars of the default
// limits (each charged ~8.5 MiB: GrammarLimits::max_lazy_bytes and its rules).
inline constexpr int64_t kDefaultGrammarCacheBytes = int64_t{32} << 20;

struct EngineOptions {
  std::string model_path;
  std::string tokenizer_path;               // --tokenizer: overrides the model's (tokenizer.json, GGUF, tokenizer.bin)
  std::optional<int64_t> memory_limit_bytes;  // --memory-limit; else cgroup, else physical
  double memory_fraction = 0.9;
  std::optional<int64_t> max_batch_memory_bytes;  // cap on the KV pool
  int64_t block_tokens = 16;
  DType kv_dtype = DType::kF16;             // --kv-cache-dtype: f16 or f32
  int64_t step_tokens = 512;                // --max-batch-prefill-tokens
  int64_t step_seqs = 64;                   // --max-batch-size
  int64_t max_total_tokens = 0;             // 0: the model's context
  int64_t max_concurrent_requests = 128;
  int64_t request_budget_bytes = 0;         // --max-request-memory: admission's byte budget; 0: the default
  int64_t grammar_cache_bytes = kDefaultGrammarCacheBytes;  // --grammar-cache-memory: shared grammars; 0: none
  int threads = 0;                          // 0: the cores available
  bool huge_pages = true;                   // weights read into huge pages (FileBacking)
  bool prefix_caching = true;               // --prefix-caching: share full prompt blocks (kv/block_pool.h)
};

// --kv-cache-dtype's value: "f16" or "f32" (any case); else kInvalidArgument naming both.
Result<DType> kv_cache_dtype_from_name(const std::string& name);
// The flag's spelling of kF16 / kF32: "f16" / "f32".
inline const char* kv_cache_dtype_name(DType d) { return d == DType::kF16 ? "f16" : "f32"; }

// How the model file's bytes are held: read into huge pages unless turned off.
inline FileBacking weights_backing(const EngineOptions& o) {
  return o.huge_pages ? FileBacking::kHugePageCopy : FileBacking::kMapped;
}

struct EngineSetup {
  LoadedModel model;
  ModelTokenizer tokenizer;  // tokenizer.tokenizer is never null after load_engine_model
  // The vocabulary as a prefix tree for grammar masks: built with the
  // tokenizer, so the resident figure the plan starts from counts it.
  std::shared_ptr<const TokenTrie> token_trie;
  // What the process held besides the weights when loading ended (before
  // serve starts its HTTP threads): the plan's runtime base, the same figure
  // in serve, `plimsoll plan` and the ramp. Later thread stacks are in the
  // runtime margin.
  int64_t runtime_base_bytes = 0;
  MemoryBudget budget;
  MemoryPlan plan;
  std::unique_ptr<ThreadPool> threads;
  std::unique_ptr<KvBlockPool> pool;
  std::unique_ptr<BatchEngine> engine;
  std::optional<DecoderWeights> weights;  // bound in phase 1, moved into the engine in phase 2
};

// Phase 1 (fast: mmap and parse): the model file and its tokenizer.
Result<EngineSetup> load_engine_model(const EngineOptions& options);
// Phase 2 (slow: pages the weights in): budget, plan (plan_serve_memory), pool,
// engine, warm-up. A bench without HTTP sets settings.api.threads = 0.
Status plan_and_start_engine(const ServeConfig& settings, EngineSetup& setup);

// What the process holds now besides the model's weights (RSS less the tensor
// bytes already resident as private copies): the plan's runtime base.
int64_t resident_bytes_besides_weights(const LoadedModel& model);
// Both phases.
Result<EngineSetup> setup_engine(const ServeConfig& settings);

}  // namespace plimsoll
