// The charge arithmetic of admission (request_cost.h).
#include "sched/request_cost.h"

#include <algorithm>
#include <unordered_set>

#include "engine/grammar/grammar.h"
#include "sched/sequence.h"

namespace plimsoll::sched {
namespace {

constexpr int64_t kSlotBytes = 64;
constexpr int64_t kTokenizeRecordBytes = 704;  // a request's slot in the submission's vector/deque (x2 growth)

// A prompt's ids (capacity up to twice the size) and the text the HTTP side keeps.
int64_t prompt_bytes(const GenerationRequest& r) {
  return 2 * 4 * static_cast<int64_t>(r.prompt_ids.size()) + r.held_text_bytes;
}

// A running sequence: its state, tokens reserved to the full length, penalty
// counts (a hash node per distinct token), block table, prefix-cache keys (one
// per full block: at most one per token), stream decoder.
int64_t sequence_bytes(const GenerationRequest& r) {
  const int64_t total = static_cast<int64_t>(r.prompt_ids.size()) + r.params.max_new_tokens;
  return static_cast<int64_t>(sizeof(Sequence)) + 4 * total + 48 * total + 8 * (total + 1) + 2 * 1024;
}

int64_t response_bytes(const GenerationRequest& r, const CostModel& m) {
  const int64_t tokens = r.params.max_new_tokens;
  const int64_t prompt = static_cast<int64_t>(r.prompt_ids.size());
  const int64_t alternatives = std::max<int32_t>(0, r.top_n_tokens);
  // The held prompt text again in the answer (echo, return_full_text) and its JSON.
  int64_t bytes = kItemFixedBytes + kGeneratedTextCopies * tokens * m.token_text_bytes + 2 * r.held_text_bytes;
  if (r.streamed) {
    // A slow reader's queue may hold every event of the item.
    bytes += tokens * (static_cast<int64_t>(sizeof(TokenEvent)) +
                       alternatives * static_cast<int64_t>(sizeof(TokenInfo)) + 4 * m.token_text_bytes);
  } else if (r.token_records) {
    bytes += tokens * (1 + alternatives) * token_record_bytes(m);
  }
  if (r.prompt_details) bytes += prompt * (1 + std::max<int32_t>(0, r.prompt_top_n)) * token_record_bytes(m);
  return bytes;
}

}  // namespace

int64_t token_record_bytes(const CostModel& m) {
  return kTokenRecordBytes + kRecordBytesPerTextByte * m.token_text_bytes;
}

SubmissionCost submission_cost(const std::vector<GenerationRequest>& items, const CostModel& m) {
  SubmissionCost c;
  c.bookkeeping_bytes = kSubmissionFixedBytes;
  std::unordered_set<const void*> stop_lists, bias_lists;
  int64_t largest_sequence = 0;
  for (const GenerationRequest& r : items) {
    c.prompt_bytes += prompt_bytes(r);
    c.bookkeeping_bytes += static_cast<int64_t>(sizeof(GenerationRequest)) + kSlotBytes;
    largest_sequence = std::max(largest_sequence, sequence_bytes(r));
    c.response_bytes += response_bytes(r, m);
    if (!r.params.stop.empty() && stop_lists.insert(r.params.stop.identity()).second) {
      c.stop_bytes += r.params.stop.bytes();
    }
    if (!r.params.logit_bias.empty() && bias_lists.insert(r.params.logit_bias.identity()).second) {
      c.stop_bytes += r.params.logit_bias.bytes();
    }
    if (r.params.grammar && !r.params.grammar_cached && bias_lists.insert(r.params.grammar.get()).second) {
      c.stop_bytes += r.params.grammar->bytes();  // a cached grammar is the grammar cache's (its plan line)
    }
  }
  // Only so many items are sequences at once; the rest wait as requests.
  const int64_t sequences = std::min<int64_t>(static_cast<int64_t>(items.size()), m.sequence_slots);
  c.bookkeeping_bytes += sequences * largest_sequence;
  return c;
}

int64_t prompt_build_bytes(int64_t items, int64_t text_bytes) {
  return items * (static_cast<int64_t>(sizeof(GenerationRequest)) + kSlotBytes + 2 * 4 * 2) + 2 * 4 * text_bytes;
}

int64_t tokenize_cost_bytes(int64_t text_bytes, const CostModel& m) {
  const int64_t tokens = text_bytes + 2;  // a token has at least one byte; BOS/EOS besides
  // ids and spans (x2 growth), the {"id","text","start","stop"} object (~600 B),
  // its dumped text, and the token's text in both.
  return kSubmissionFixedBytes + 4 * text_bytes + tokens * (2 * 4 + 2 * 24 + kTokenizeRecordBytes + 8 * m.token_text_bytes);
}

}  // namespace plimsoll::sched
