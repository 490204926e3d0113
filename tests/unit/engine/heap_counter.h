// The test binary's own global operator new / delete (heap_counter_test.cpp):
// allocations counted on every thread while counting is on, and the bytes
// each thread holds (malloc_usable_size) with their peak. One replacement per
// test binary; tests include this header to read it.
#pragma once

#include <atomic>
#include <cstdint>

namespace heap_counter {

// Allocations on any thread while `counting` is true.
extern std::atomic<bool> counting;
extern std::atomic<long> allocations;

// This thread's live heap bytes (allocated here minus freed here) and its peak
// since reset_peak().
int64_t live_bytes();
int64_t peak_bytes();
void reset_peak();

}  // namespace heap_counter
