// BlockIndex: the prefix cache's map from a block key (kv/block_hash.h) to the
// block that holds it. Open addressing with linear probing and backward-shift
// deletion in one table sized at creation: nothing allocates afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace plimsoll {

class BlockIndex {
 public:
  // Room for max_entries keys: a power-of-two table of at least twice as many slots.
  explicit BlockIndex(int64_t max_entries);
  // Bytes of that table per entry, at most (the plan counts them).
  static int64_t max_bytes_per_entry();

  // The block under `key`, or -1.
  int32_t find(uint64_t key) const;
  // Adds key -> block; false (nothing changed) when the key is present.
  bool insert(uint64_t key, int32_t block);
  // Removes `key` if it maps to `block`.
  void erase(uint64_t key, int32_t block);
  int64_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key = 0;
    int32_t block = -1;  // -1: empty
  };
  std::size_t home(uint64_t key) const { return static_cast<std::size_t>(key) & mask_; }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  int64_t size_ = 0;
};

}  // namespace plimsoll
