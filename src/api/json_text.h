// JSON text that never fails on bad UTF-8 (invalid bytes become U+FFFD), and
// the small JSON shapes shared by the routes (logprobs, tokens).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "sched/request.h"

namespace plimsoll::api {

using json = nlohmann::json;

// Compact JSON; invalid UTF-8 in any string is replaced, never thrown.
std::string dump_json(const json& value);
// A logprob, or null when unknown (NaN / infinite).
json logprob_json(float logprob);
// TGI's Token: {"id","text","logprob","special"}.
json token_json(const sched::TokenInfo& token);
// TGI's PrefillToken: {"id","text","logprob"}.
json prefill_token_json(const sched::TokenInfo& token);

}  // namespace plimsoll::api
