// mallopt(M_ARENA_MAX) where glibc is the allocator.
#include "memory/heap_arenas.h"

#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace plimsoll {

std::string bound_heap_arenas(int arenas) {
  if (const char* env = std::getenv("MALLOC_ARENA_MAX"); env && *env) {
    return std::string("heap: MALLOC_ARENA_MAX=") + env + " (from the environment)";
  }
#if defined(__GLIBC__)
  if (mallopt(M_ARENA_MAX, arenas) == 1) return "heap: " + std::to_string(arenas) + " malloc arenas";
  return "heap: mallopt(M_ARENA_MAX) refused; malloc's default arenas";
#else
  return "heap: not glibc; the allocator's defaults";
#endif
}

}  // namespace plimsoll
