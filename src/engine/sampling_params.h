// SamplingParams: how the next token is chosen, with TGI's parameter names
// and semantics; plain data carried from the API down to the sampler.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/generation_defaults.h"

namespace plimsoll {

class Grammar;  // engine/grammar/grammar.h

// Stop sequences, held once: copies of a StopList (every item of a
// submission, its sampler and stop matcher) share one immutable list.
class StopList {
 public:
  StopList() = default;
  StopList(std::vector<std::string> stops)  // NOLINT(google-explicit-constructor): a list of strings
      : list_(stops.empty() ? nullptr : std::make_shared<const std::vector<std::string>>(std::move(stops))) {}
  StopList(std::initializer_list<std::string> stops) : StopList(std::vector<std::string>(stops)) {}

  const std::vector<std::string>& strings() const { return list_ ? *list_ : empty_list(); }
  auto begin() const { return strings().begin(); }
  auto end() const { return strings().end(); }
  size_t size() const { return strings().size(); }
  bool empty() const { return strings().empty(); }
  const std::string& operator[](size_t i) const { return strings()[i]; }
  // The list's heap bytes (strings and their slots), as admission charges it once.
  int64_t bytes() const {
    int64_t total = 0;
    for (const std::string& s : strings()) total += static_cast<int64_t>(sizeof(std::string) + s.size()) + 16;
    return total;
  }
  // Equal for copies of one list (how admission counts a shared list once).
  const void* identity() const { return list_.get(); }

 private:
  static const std::vector<std::string>& empty_list() {
    static const std::vector<std::string> kEmpty;
    return kEmpty;
  }
  std::shared_ptr<const std::vector<std::string>> list_;
};

// OpenAI's logit_bias: (token id, bias) pairs added to the logits before
// anything else, held once and shared by copies like StopList.
class LogitBias {
 public:
  using Entry = std::pair<int32_t, float>;
  LogitBias() = default;
  explicit LogitBias(std::vector<Entry> entries)
      : list_(entries.empty() ? nullptr : std::make_shared<const std::vector<Entry>>(std::move(entries))) {}

  const std::vector<Entry>& entries() const { return list_ ? *list_ : empty_list(); }
  bool empty() const { return entries().empty(); }
  size_t size() const { return entries().size(); }
  // The list's heap bytes, as admission charges it once per submission.
  int64_t bytes() const { return list_ ? static_cast<int64_t>(list_->capacity() * sizeof(Entry)) + 64 : 0; }
  const void* identity() const { return list_.get(); }

 private:
  static const std::vector<Entry>& empty_list() {
    static const std::vector<Entry> kEmpty;
    return kEmpty;
  }
  std::shared_ptr<const std::vector<Entry>> list_;
};

struct SamplingParams {
  bool do_sample = false;          // false: greedy unless a warper below asks for sampling
  float temperature = 1.0f;        // > 0; 1 = unchanged (0 is accepted and means greedy)
  int32_t top_k = 0;               // 0 = off
  float top_p = 1.0f;              // (0, 1]; 1 = off
  float typical_p = 1.0f;          // (0, 1]; 1 = off
  float min_p = 0.0f;              // [0, 1]; keep tokens with p >= min_p x the top p (HF MinPLogitsWarper); 0 = off
  float repetition_penalty = 1.0f; // > 0; 1 = off (HF: logit/p if > 0, logit*p if < 0)
  float frequency_penalty = 0.0f;  // logit -= penalty * count(token in prompt + generated)
  float presence_penalty = 0.0f;   // logit -= penalty if the token appeared at all
  std::optional<uint64_t> seed;    // same seed, same output; unset: a random seed is drawn
  int64_t max_new_tokens = 20;
  StopList stop;                   // stop sequences (matched on the generated text), shared by copies
  LogitBias logit_bias;            // added to the logits first (OpenAI), shared by copies
  bool ignore_eos = false;
  // Structured output: every token that cannot continue a valid output is
  // masked (engine/grammar/); shared by copies, charged once per submission
  // unless the server's GrammarCache holds it (grammar_cached).
  std::shared_ptr<const Grammar> grammar;
  // `grammar` is pinned in the GrammarCache (engine/grammar/grammar_cache.h),
  // whose line of the memory plan pays for it: admission charges nothing for it.
  bool grammar_cached = false;

  // TGI: sampling happens when do_sample is set or any warper is active.
  bool samples() const {
    return temperature > 0.0f &&
           (do_sample || temperature != 1.0f || top_k > 0 || top_p < 1.0f || typical_p < 1.0f || min_p > 0.0f);
  }
  // Range checks; the message names the parameter and its allowed range.
  Status validate() const;
};

// generation_config.json's sampling defaults, as transformers reads them:
// do_sample when given; temperature, top_k, top_p and typical_p only when the
// model then samples (greedy decoding ignores them); repetition_penalty always.
// Out-of-range values are left out. Request fields are read on top. (Inline:
// the API layer uses it without linking the engine.)
inline void apply_generation_defaults(const GenerationDefaults& d, SamplingParams* s) {
  auto open_unit = [](double v) { return v > 0.0 && v < 1.0; };
  auto finite_positive = [](double v) { return v > 0.0 && v < 1e30; };
  if (d.do_sample) s->do_sample = *d.do_sample;
  if (s->do_sample) {
    if (d.temperature && finite_positive(*d.temperature)) s->temperature = static_cast<float>(*d.temperature);
    if (d.top_k && *d.top_k > 0 && *d.top_k <= INT32_MAX) s->top_k = static_cast<int32_t>(*d.top_k);
    if (d.top_p && open_unit(*d.top_p)) s->top_p = static_cast<float>(*d.top_p);
    if (d.typical_p && open_unit(*d.typical_p)) s->typical_p = static_cast<float>(*d.typical_p);
  }
  if (d.repetition_penalty && finite_positive(*d.repetition_penalty)) {
    s->repetition_penalty = static_cast<float>(*d.repetition_penalty);
  }
}

}  // namespace plimsoll
