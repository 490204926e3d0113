// The mask worker: one thread, slots computed in the order started.
#include "sched/mask_ahead.h"

#include <algorithm>
#include <spdlog/spdlog.h>

#include "sched/fault.h"

namespace plimsoll::sched {

MaskAhead::MaskAhead(std::shared_ptr<const TokenTrie> trie, int64_t slots) : trie_(std::move(trie)) {
  const size_t words = (static_cast<size_t>(trie_->vocab_size()) + 63) / 64;
  slots_.resize(static_cast<size_t>(std::max<int64_t>(slots, 0)));
  for (Slot& s : slots_) s.bits.reserve(words);
  queue_.reserve(slots_.size());
  scratch_.reserve(*trie_);
  worker_ = std::thread([this] { run(); });
}

MaskAhead::~MaskAhead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

int32_t MaskAhead::start(const GrammarMatcher& matcher, int64_t tokens_left) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto free = std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.state == State::kFree; });
  if (free == slots_.end()) return -1;
  free->state = State::kQueued;
  free->matcher = &matcher;
  free->tokens_left = tokens_left;
  const auto slot = static_cast<int32_t>(free - slots_.begin());
  queue_.push_back(slot);
  cv_.notify_all();
  return slot;
}

std::optional<bool> MaskAhead::finish(int32_t slot, std::span<const float> from, std::span<float> to,
                                      std::span<const int32_t> end_ids) {
  if (slot < 0 || static_cast<size_t>(slot) >= slots_.size()) return std::nullopt;
  Slot& s = slots_[static_cast<size_t>(slot)];
  std::unique_lock<std::mutex> lock(mu_);
  if (s.state == State::kFree) return std::nullopt;
  cv_.wait(lock, [&] { return s.state == State::kDone || s.state == State::kFailed; });
  const bool ok = s.state == State::kDone;
  s.state = State::kFree;
  lock.unlock();  // the slot's bits are the caller's until the next start()
  if (!ok) return std::nullopt;
  if (!s.alive) return false;
  return s.matcher->apply(from, to, s.bits, end_ids);
}

void MaskAhead::clear() {
  std::unique_lock<std::mutex> lock(mu_);
  queue_head_ = queue_.size();
  cv_.wait(lock, [&] {
    return std::none_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.state == State::kRunning; });
  });
  for (Slot& s : slots_) {
    s.state = State::kFree;
    s.matcher = nullptr;
  }
  queue_.clear();
  queue_head_ = 0;
}

void MaskAhead::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || queue_head_ < queue_.size(); });
    if (stop_) return;
    Slot& s = slots_[static_cast<size_t>(queue_[queue_head_++])];
    s.state = State::kRunning;
    lock.unlock();
    bool ok = true;
    try {
      s.alive = s.matcher->fill(*trie_, s.tokens_left, scratch_, s.bits);
    } catch (...) {  // the engine thread masks this one itself
      spdlog::warn("grammar mask ahead of sampling failed: {}; the engine thread masks it", describe_current_exception());
      ok = false;
    }
    lock.lock();
    s.state = ok ? State::kDone : State::kFailed;
    cv_.notify_all();
  }
}

}  // namespace plimsoll::sched
