// MaskAhead: the grammar masks of a step's constrained sequences, computed on
// their own thread while the engine runs the step's forward pass (a mask
// needs the sequence's position, not its logits). Started after scheduling,
// consumed when sampling, cleared before the scheduler may release a
// sequence: a slot reads its sequence's matcher, which nothing else touches
// meanwhile. Slots of vocabulary bits are made at start-up, one per sequence
// a step can hold (StepWorkspaceSizes::grammar_mask_bytes): serving
// allocates nothing here. Engine thread calls only.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "engine/grammar/token_trie.h"

namespace plimsoll::sched {

class MaskAhead {
 public:
  // `slots`: masks in flight at once (the most sequences one step samples).
  MaskAhead(std::shared_ptr<const TokenTrie> trie, int64_t slots);
  ~MaskAhead();
  MaskAhead(const MaskAhead&) = delete;
  MaskAhead& operator=(const MaskAhead&) = delete;

  // Starts the mask of `matcher`'s position under `tokens_left`; the slot,
  // or -1 when none is free. `matcher` must stay as it is until finish() or
  // clear().
  int32_t start(const GrammarMatcher& matcher, int64_t tokens_left);
  // Waits for the slot's mask and writes `from` masked by it into `to` (one
  // pass; they may be the same span); the slot is free again. As
  // GrammarMatcher::mask (false: nothing allowed), or nullopt where the mask
  // failed: then `to` is untouched and the caller masks itself.
  std::optional<bool> finish(int32_t slot, std::span<const float> from, std::span<float> to,
                             std::span<const int32_t> end_ids);
  // Drops masks not yet begun, waits for the one running, frees every slot.
  void clear();

 private:
  enum class State { kFree, kQueued, kRunning, kDone, kFailed };
  struct Slot {
    State state = State::kFree;
    const GrammarMatcher* matcher = nullptr;
    int64_t tokens_left = 0;
    std::vector<uint64_t> bits;  // [vocab / 64]
    bool alive = false;
  };
  void run();

  std::shared_ptr<const TokenTrie> trie_;
  std::vector<Slot> slots_;
  std::vector<int32_t> queue_;  // slots to compute, in the order started ([slots], reserved)
  size_t queue_head_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  GrammarScratch scratch_;  // the worker's
  std::thread worker_;
};

}  // namespace plimsoll::sched
