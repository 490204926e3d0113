// Faults on the engine thread: an exception (std::bad_alloc included) while
// scheduling, stepping, sampling or detokenizing is contained — the sequences
// it touched end with an internal error event (HTTP 500 / an SSE error event),
// their blocks return, and the server goes on. Tests inject faults through a hook.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>

#include "core/result.h"

namespace plimsoll::sched {

// Where a test injects a fault (throws from the hook); production sets no hook.
// kQueueItem (turning a submitted item into a waiting sequence) and kSample name a
// sequence (the ticket of its submission); kSchedule and kStep the whole step (ticket 0).
enum class FaultSite { kSchedule, kQueueItem, kStep, kSample };
using FaultHook = std::function<void(FaultSite site, uint64_t ticket)>;

// The message of the exception being handled (call inside a catch block).
inline std::string describe_current_exception() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an unknown exception";
  }
}

// The error a sequence ends with when a fault hit it.
inline Error fault_error(const std::string& what) {
  return Error{ErrorCode::kInternal, "the server failed while generating this request (" + what +
                                         "); other requests are unaffected"};
}

}  // namespace plimsoll::sched
