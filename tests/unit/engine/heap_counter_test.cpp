// Global operator new / delete for test_engine (see heap_counter.h), and a
// check that they count what they should.
#include "heap_counter.h"

#include <gtest/gtest.h>

#include <malloc.h>

#include <cstdlib>
#include <new>
#include <vector>

// The replacement operators below pair malloc with free by design; GCC 12
// under -fsanitize=address still flags the pairing once it inlines them.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace heap_counter {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
namespace {
thread_local int64_t t_live = 0;
thread_local int64_t t_peak = 0;
}  // namespace
int64_t live_bytes() { return t_live; }
int64_t peak_bytes() { return t_peak; }
void reset_peak() { t_peak = t_live; }

void* allocate(std::size_t n) noexcept {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = std::malloc(n ? n : 1);
  if (p) {
    t_live += static_cast<int64_t>(malloc_usable_size(p));
    if (t_live > t_peak) t_peak = t_live;
  }
  return p;
}
void release(void* p) noexcept {
  if (!p) return;
  t_live -= static_cast<int64_t>(malloc_usable_size(p));
  std::free(p);
}
}  // namespace heap_counter

void* operator new(std::size_t n) {
  if (void* p = heap_counter::allocate(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
// The nothrow forms too (std::stable_sort's temporary buffer uses them), so
// every allocation and release in the binary pairs malloc with free.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return heap_counter::allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return heap_counter::allocate(n); }
void operator delete(void* p, const std::nothrow_t&) noexcept { heap_counter::release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { heap_counter::release(p); }
void operator delete(void* p) noexcept { heap_counter::release(p); }
void operator delete[](void* p) noexcept { heap_counter::release(p); }
void operator delete(void* p, std::size_t) noexcept { heap_counter::release(p); }
void operator delete[](void* p, std::size_t) noexcept { heap_counter::release(p); }

namespace {

TEST(HeapCounter, CountsAllocationsAndThisThreadsBytes) {
  heap_counter::allocations = 0;
  heap_counter::counting = true;
  auto* v = new std::vector<int>(100);
  heap_counter::counting = false;
  EXPECT_GE(heap_counter::allocations.load(), 2);  // the vector and its buffer
  const int64_t before = heap_counter::live_bytes();
  heap_counter::reset_peak();
  {
    std::vector<char> big(1 << 20);
    EXPECT_GE(heap_counter::live_bytes() - before, 1 << 20);
  }
  EXPECT_EQ(heap_counter::live_bytes(), before);
  EXPECT_GE(heap_counter::peak_bytes() - before, 1 << 20);
  delete v;
}

}  // namespace
