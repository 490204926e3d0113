// A sequence's start: its tokens reserved to the full length, its sampler
// (seeded by the request, else at random), stop matcher, grammar and decoder.
#include "sched/sequence.h"

#include <limits>

namespace plimsoll::sched {

Sequence::Sequence(Submission* owner_, size_t index_, GenerationRequest request_, const TextTokenizer& tokenizer)
    : owner(owner_),
      index(index_),
      request(std::move(request_)),
      prompt_len(static_cast<int64_t>(request.prompt_ids.size())),
      sampler(request.params, request.params.seed.value_or(random_seed())),
      stops(request.params.stop),
      grammar(request.params.grammar),
      // A grammar constrains the raw text, token for token: its output is served as is, not
      // cleaned up (clean_up_tokenization_spaces could change what the grammar matched).
      decoder(tokenizer, request.prompt_ids.empty() ? -1 : request.prompt_ids.back(),
              /*raw=*/request.params.grammar != nullptr) {
  tokens.reserve(static_cast<size_t>(total_tokens()));
  tokens = request.prompt_ids;
  prefill_end = prompt_len;
  sampler.observe_prompt(tokens);
  if (request.prompt_details && !tokens.empty()) {  // the first token has no logprob; the prefill's rows add the rest
    prefill.reserve(static_cast<size_t>(prompt_len));
    prefill.push_back({tokens[0], std::numeric_limits<float>::quiet_NaN(), tokenizer.piece_string(-1, tokens[0]),
                       tokenizer.is_special(tokens[0])});
    if (request.prompt_top_n > 0) {
      prefill_top.reserve(static_cast<size_t>(prompt_len));
      prefill_top.emplace_back();
    }
  }
}

}  // namespace plimsoll::sched
