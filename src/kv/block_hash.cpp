// Chained block keys: splitmix64's finalizer over the parent key and each token.
#include "kv/block_hash.h"

#include <cstring>

namespace plimsoll {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t add(uint64_t h, uint64_t v) { return mix(h + kGolden + v); }

uint64_t bits(double d) {
  uint64_t u = 0;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

}  // namespace

uint64_t prefix_root_hash(const ModelConfig& c, DType kv_dtype, int64_t block_tokens, uint64_t salt) {
  uint64_t h = mix(salt);
  for (int64_t v : {c.dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim(), c.ffn_dim, c.vocab_size, c.max_seq_len,
                    static_cast<int64_t>(c.positions), static_cast<int64_t>(c.rope_layout),
                    static_cast<int64_t>(kv_dtype), block_tokens}) {
    h = add(h, static_cast<uint64_t>(v));
  }
  for (float f : c.rope_freq_factors) h = add(h, bits(static_cast<double>(f)));
  h = add(h, bits(static_cast<double>(c.rope_freq_scale)));
  return add(h, bits(static_cast<double>(c.rope_theta)));
}

uint64_t chain_block_hash(uint64_t parent, std::span<const int32_t> tokens) {
  uint64_t h = mix(parent ^ kGolden);
  for (int32_t t : tokens) h = add(h, static_cast<uint32_t>(t));
  return add(h, tokens.size());
}

}  // namespace plimsoll
