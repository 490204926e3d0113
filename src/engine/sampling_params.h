// SamplingParams: how the next token is chosen, with TGI's parameter names
// and semantics; plain data carried from the API down to the sampler.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace plimsoll {

struct SamplingParams {
  bool do_sample = false;          // false: greedy unless a warper below asks for sampling
  float temperature = 1.0f;        // > 0; 1 = unchanged (0 is accepted and means greedy)
  int32_t top_k = 0;               // 0 = off
  float top_p = 1.0f;              // (0, 1]; 1 = off
  float typical_p = 1.0f;          // (0, 1]; 1 = off
  float repetition_penalty = 1.0f; // > 0; 1 = off (HF: logit/p if > 0, logit*p if < 0)
  float frequency_penalty = 0.0f;  // logit -= penalty * count(token in prompt + generated)
  float presence_penalty = 0.0f;   // logit -= penalty if the token appeared at all
  std::optional<uint64_t> seed;    // same seed, same output; unset: a random seed is drawn
  int64_t max_new_tokens = 20;
  std::vector<std::string> stop;   // stop sequences (matched on the generated text)
  bool ignore_eos = false;

  // TGI: sampling happens when do_sample is set or any warper is active.
  bool samples() const {
    return temperature > 0.0f &&
           (do_sample || temperature != 1.0f || top_k > 0 || top_p < 1.0f || typical_p < 1.0f);
  }
  // Range checks; the message names the parameter and its allowed range.
  Status validate() const;
};

}  // namespace plimsoll
