// Linear probing; deletion shifts later members of the probe run back, so no
// tombstones pile up however long the server runs.
#include "kv/block_index.h"

#include <cassert>
#include <cstddef>

namespace plimsoll {

BlockIndex::BlockIndex(int64_t max_entries) {
  std::size_t n = 2;
  while (n < static_cast<std::size_t>(2 * (max_entries < 1 ? 1 : max_entries))) n <<= 1;
  slots_.resize(n);
  mask_ = n - 1;
}

int64_t BlockIndex::max_bytes_per_entry() {
  // Slots >= 2 x entries, rounded up to a power of two: < 4 slots per entry.
  return 4 * static_cast<int64_t>(sizeof(Slot));
}

int32_t BlockIndex::find(uint64_t key) const {
  for (std::size_t i = home(key);; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.block < 0) return -1;
    if (s.key == key) return s.block;
  }
}

bool BlockIndex::insert(uint64_t key, int32_t block) {
  assert(block >= 0 && 2 * (size_ + 1) <= static_cast<int64_t>(slots_.size()));
  for (std::size_t i = home(key);; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.block < 0) {
      s = {key, block};
      ++size_;
      return true;
    }
    if (s.key == key) return false;
  }
}

void BlockIndex::erase(uint64_t key, int32_t block) {
  std::size_t i = home(key);
  for (;; i = (i + 1) & mask_) {
    if (slots_[i].block < 0) return;
    if (slots_[i].key == key) break;
  }
  if (slots_[i].block != block) return;
  // Backward shift: move each later member of the run whose home is not in (i, j] into the hole.
  for (std::size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
    if (slots_[j].block < 0) break;
    const std::size_t h = home(slots_[j].key);
    const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
    if (stays) continue;
    slots_[i] = slots_[j];
    i = j;
  }
  slots_[i] = Slot{};
  --size_;
}

}  // namespace plimsoll
