// The plain, unbatched reference forward pass of any supported decoder (one
// token at a time), kept forever as the oracle the batched engine is tested against.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_config.h"
#include "model/decoder_weights.h"

namespace plimsoll {

class ThreadPool;

// A contiguous KV cache for one sequence, for the reference forward.
struct ReferenceKvCache {
  int64_t max_seq_len = 0;
  int64_t kv_dim = 0;
  std::vector<float> k;  // [n_layers, max_seq_len, kv_dim]
  std::vector<float> v;  // [n_layers, max_seq_len, kv_dim]

  ReferenceKvCache(const ModelConfig& config, int64_t max_seq_len);
  float* k_at(int64_t layer, int64_t pos) { return k.data() + (layer * max_seq_len + pos) * kv_dim; }
  float* v_at(int64_t layer, int64_t pos) { return v.data() + (layer * max_seq_len + pos) * kv_dim; }
};

// The reference forward pass: token at position pos -> logits [vocab].
// Writes this position's keys and values into cache. Allocates its own
// activations (it is the readable oracle, not the hot path). With learned
// positions, pos must be below config.max_seq_len.
class DecoderReference {
 public:
  DecoderReference(const ModelConfig& config, DecoderWeights weights);
  const ModelConfig& config() const { return config_; }
  const DecoderWeights& weights() const { return weights_; }

  void forward(int32_t token, int64_t pos, ReferenceKvCache& cache, float* logits,
               ThreadPool* pool = nullptr);

 private:
  void attention(int64_t layer, int64_t pos, ReferenceKvCache& cache);

  ModelConfig config_;
  DecoderWeights weights_;
  std::vector<float> alibi_;  // [n_heads] slopes, ALiBi only
  // activations, sized once
  std::vector<float> x_, xb_, xb2_, q_, k_, v_, att_, hb_, hb2_;
};

}  // namespace plimsoll
