// The model's metadata as a workload declares it in plimsoll.dev/* annotations
// (the webhook cannot read the model file): shape, weight bytes and runtime.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/result.h"
#include "core/model_config.h"

namespace plimsoll::webhook {

using Annotations = std::map<std::string, std::string>;

// Every annotation the webhook reads; docs/kubernetes.md describes each.
namespace keys {
inline constexpr const char* kPrefix = "plimsoll.dev/";
inline constexpr const char* kModelParams = "plimsoll.dev/model-params";          // 7B, 260K, 6738415616
inline constexpr const char* kModelDtype = "plimsoll.dev/model-dtype";            // f32 f16 bf16 q8_0 q4_0 q4_k ...
inline constexpr const char* kModelWeightsBytes = "plimsoll.dev/model-weights-bytes";  // exact, overrides params x dtype
inline constexpr const char* kModelLayers = "plimsoll.dev/model-layers";
inline constexpr const char* kModelHeads = "plimsoll.dev/model-heads";            // or model-head-dim
inline constexpr const char* kModelKvHeads = "plimsoll.dev/model-kv-heads";       // default: heads
inline constexpr const char* kModelHeadDim = "plimsoll.dev/model-head-dim";       // or model-heads
inline constexpr const char* kModelDim = "plimsoll.dev/model-dim";
inline constexpr const char* kModelFfn = "plimsoll.dev/model-ffn";
inline constexpr const char* kModelVocab = "plimsoll.dev/model-vocab";
inline constexpr const char* kModelContext = "plimsoll.dev/model-context";
inline constexpr const char* kRuntimeBytes = "plimsoll.dev/runtime-bytes";        // default 96Mi
inline constexpr const char* kNodeCpus = "plimsoll.dev/node-cpus";                // threads when unset; default 128
inline constexpr const char* kContainer = "plimsoll.dev/container";              // names the serve container
inline constexpr const char* kCheck = "plimsoll.dev/check";                       // "skip": not checked
// The tenants file: inline JSON on a workload (annotation), and the label that
// marks a ConfigMap holding it under kTenantsDataKey (webhook/tenants_check.h).
inline constexpr const char* kTenants = "plimsoll.dev/tenants";
inline constexpr const char* kTenantsDataKey = "tenants.json";
}  // namespace keys

// What the server measures at start (resident binary, libraries, tokenizer) plus
// the 32 MiB margin engine_setup adds; a workload may declare its own.
inline constexpr int64_t kDefaultRuntimeBytes = int64_t{96} << 20;
// Threads the plan assumes when neither --threads nor a CPU limit says (the
// server uses every CPU of its affinity mask, i.e. the node's).
inline constexpr int64_t kDefaultNodeCpus = 128;

struct ModelMetadata {
  ModelConfig config;
  int64_t weights_bytes = 0;
  int64_t runtime_bytes = kDefaultRuntimeBytes;
};

// True when any plimsoll.dev/model-* annotation is present.
bool declares_model(const Annotations& annotations);
// The metadata, or an error naming the annotation that is missing or wrong.
Result<ModelMetadata> read_model_metadata(const Annotations& annotations);
// "7B", "1.1B", "260K", "6738415616" -> a parameter count.
Result<int64_t> parse_param_count(const std::string& text);
// Kubernetes CPU quantity ("2", "500m", "1.5") -> whole CPUs, rounded up.
Result<int64_t> parse_cpu_count(const std::string& text);

}  // namespace plimsoll::webhook
