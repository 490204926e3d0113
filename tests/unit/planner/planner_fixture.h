// A plan request on stories260K's shape (no file needed): the planner's unit
// tests share it.
#pragma once

#include "core/bytes.h"
#include "planner/static_plan.h"

namespace plimsoll::planner::testing {

inline PlanRequest stories_request(int64_t limit_bytes = 256 * kMiB) {
  PlanRequest r;
  r.model.path = "stories260K.gguf";
  r.model.config.dim = 64;
  r.model.config.n_layers = 5;
  r.model.config.n_heads = 8;
  r.model.config.n_kv_heads = 4;
  r.model.config.ffn_dim = 172;
  r.model.config.vocab_size = 512;
  r.model.config.max_seq_len = 512;
  r.model.weights_bytes = 1056512;
  r.model.runtime_base_bytes = 20 * kMiB;
  r.serve.engine.threads = 2;
  r.prompt_tokens = 16;
  r.max_new_tokens = 256;
  r.memory_limit_bytes = limit_bytes;
  return r;
}

}  // namespace plimsoll::planner::testing
