// Bounded parsing of request bodies: nlohmann's SAX parser (iterative, no
// recursion) builds the tree under a nesting limit and a bound on the tree's
// bytes per body byte (body_bytes x kJsonTreeBytesPerBodyByte + fixed), and
// charges the tree to the request's body reservation as it is built, so no
// body of any shape costs more than the body budget let it take.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/json_text.h"
#include "core/result.h"

namespace plimsoll::api {

class BodyReservation;  // api/body_budget.h

// Arrays and objects nested deeper than this are refused (422).
inline constexpr int64_t kJsonMaxDepth = 64;
// The tree may hold at most this many bytes (heap, malloc overhead included)
// per body byte, plus kJsonTreeFixedBytes. Measured with glibc's mallinfo2 on
// nlohmann 3.11: `[{},{},...]` 28.3 B per body byte, `[{"":{}},...]` 30.6,
// 64-deep `[[[...]]]` runs 31.7, a 2,048-prompt /generate body 8.0. The
// counted model (request_json.cpp) charges a little more than the real cost,
// transient vector growth included, so a tree never exceeds its bound.
inline constexpr int64_t kJsonTreeBytesPerBodyByte = 32;
inline constexpr int64_t kJsonTreeFixedBytes = 4096;

// The most bytes the tree of a body of `body_bytes` may take.
inline constexpr int64_t json_tree_limit_bytes(int64_t body_bytes) {
  return body_bytes * kJsonTreeBytesPerBodyByte + kJsonTreeFixedBytes;
}

struct JsonLimits {
  int64_t max_depth = kJsonMaxDepth;
  int64_t max_tree_bytes = 0;  // 0: json_tree_limit_bytes(body size)
};

// Parses a request body, charging the tree to `reservation` (the request's
// HttpRequest::body_reservation) as it is built, in steps of
// kTreeChargeStepBytes (body_budget.h). Errors
// name the limit: invalid JSON (with the parser's position), nesting deeper
// than max_depth, or a tree larger than max_tree_bytes (kInvalidArgument,
// answered 422); the body budget (--max-body-bytes-in-flight) has no room
// for the next step even after cutting the slowest bodies still being read
// (kOverloaded, answered 429 with Retry-After; it waits up to a second for
// cut bodies' bytes to come back). The charged bytes stay in the reservation
// while the tree lives (until HttpRequest::release_body); on an error they
// are given back. A reservation without a budget (default-constructed or
// released) charges nothing.
Result<json> parse_request_json(std::string_view body, BodyReservation& reservation, JsonLimits limits = {});

// The same, charging nothing: for tests and tools, never a route (a route's
// tree must be charged to its request's reservation).
Result<json> parse_request_json(std::string_view body, JsonLimits limits = {});

// The member at `path` (object keys from the top) of the JSON text `body`,
// parsed again in document order: the request tree sorts keys, and some
// members keep the client's order (a JSON schema's properties are written in
// it). Only that member is built; null when absent or the text is not JSON.
// The caller bounds its size first (the sorted member's JSON text).
nlohmann::ordered_json member_in_order(std::string_view body, const std::vector<std::string>& path);

// The bytes the tree of `value` is counted as (the model parse_request_json
// enforces); for tests and measurements. Iterative.
int64_t counted_tree_bytes(const json& value);

// Destroys a request tree now (iteratively, as nlohmann's destructor does):
// routes call it once their validated call is built, so the tree does not
// live while the request generates.
inline void release_json(json& value) { json().swap(value); }

}  // namespace plimsoll::api
