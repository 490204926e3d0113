// Test oracle: single-sequence generation on the reference forward pass,
// prompt in, streamed text out, with stop criteria and timing — the loop the
// `generate` command ran before it went through the serving engine. Its
// end-of-sequence rule is the old one (an EOS id ends unless ignore_eos; no
// grammar), kept here as an independent check, not what production runs
// (sched/output_processor.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "engine/finish_reason.h"
#include "engine/sampling_params.h"
#include "model/decoder_reference.h"
#include "tokenizer/text_tokenizer.h"

namespace plimsoll {

struct GenerationResult {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> generated_ids;
  std::string text;  // generated text (up to and including a matched stop sequence)
  FinishReason finish = FinishReason::kLength;
  uint64_t seed = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;
};

struct GenerateOptions {
  bool add_bos = true;
  ThreadPool* pool = nullptr;
  std::vector<int32_t> extra_eos_ids;  // end generation too (generation_config.json eos_token_id)
  // Called with each piece of text as soon as it is complete UTF-8.
  std::function<void(std::string_view)> on_text;
};

// Fails (kInvalidArgument) when the prompt plus max_new_tokens exceeds the
// model's context, naming both numbers.
Result<GenerationResult> reference_generate(DecoderReference& model, const TextTokenizer& tokenizer,
                                            std::string_view prompt, const SamplingParams& params,
                                            const GenerateOptions& options);

}  // namespace plimsoll
