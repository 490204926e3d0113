// The reference generation loop: prefill the prompt token by token, then
// decode with the sampler until length, EOS or a stop sequence.
#include "reference_generate.h"

#include <algorithm>
#include <chrono>

#include "engine/sampler.h"
#include "engine/stop.h"
#include "tokenizer/stream_decoder.h"

namespace plimsoll {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result<GenerationResult> reference_generate(DecoderReference& model, const TextTokenizer& tokenizer,
                                            std::string_view prompt, const SamplingParams& params,
                                            const GenerateOptions& options) {
  PLIMSOLL_TRY(params.validate());
  const ModelConfig& config = model.config();
  GenerationResult result;
  result.prompt_ids = tokenizer.encode(prompt, options.add_bos);
  if (result.prompt_ids.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "the prompt is empty and no BOS token is added");
  }
  const int64_t n_prompt = static_cast<int64_t>(result.prompt_ids.size());
  if (n_prompt + params.max_new_tokens > config.max_seq_len) {
    return make_error(ErrorCode::kInvalidArgument,
                      "prompt (" + std::to_string(n_prompt) + " tokens) + max_new_tokens (" +
                          std::to_string(params.max_new_tokens) + ") exceeds the model's context of " +
                          std::to_string(config.max_seq_len) + " tokens");
  }
  result.seed = params.seed.value_or(random_seed());
  Sampler sampler(params, result.seed);
  sampler.observe_prompt(result.prompt_ids);
  SamplerScratch scratch;
  StreamDecoder decoder(tokenizer, result.prompt_ids.back());
  StopMatcher stops(params.stop);
  ReferenceKvCache cache(config, n_prompt + params.max_new_tokens);
  std::vector<float> logits(static_cast<size_t>(config.vocab_size));
  auto emit = [&](const std::string& piece) {
    if (piece.empty()) return false;
    if (options.on_text) options.on_text(piece);
    return stops.push(piece);
  };
  // The prompt's last token is also the first decode input; its logits come from prefill.
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t pos = 0; pos < n_prompt; ++pos) {
    model.forward(result.prompt_ids[static_cast<size_t>(pos)], pos, cache, logits.data(), options.pool);
  }
  result.prefill_seconds = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < params.max_new_tokens; ++step) {
    const SampledToken next = sampler.sample(logits, scratch);
    const bool eos = next.id == tokenizer.eos_id() ||
                     std::find(options.extra_eos_ids.begin(), options.extra_eos_ids.end(), next.id) !=
                         options.extra_eos_ids.end();
    if (eos && !params.ignore_eos) {
      result.finish = FinishReason::kEosToken;
      break;
    }
    sampler.accept(next.id);
    result.generated_ids.push_back(next.id);
    if (emit(decoder.push(next.id))) {
      result.finish = FinishReason::kStopSequence;
      break;
    }
    if (step + 1 < params.max_new_tokens) {
      model.forward(next.id, n_prompt + step, cache, logits.data(), options.pool);
    }
  }
  if (result.finish != FinishReason::kStopSequence) emit(decoder.finish());
  result.decode_seconds = seconds_since(t0);
  result.text = stops.text();
  return result;
}

}  // namespace plimsoll
