// Lossy-UTF-8 JSON dumping and the token / logprob JSON shapes of TGI.
#include "api/json_text.h"

#include <cmath>

namespace plimsoll::api {

std::string dump_json(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

json logprob_json(float logprob) {
  if (!std::isfinite(logprob)) return nullptr;
  return logprob;
}

json token_json(const sched::TokenInfo& token) {
  return {{"id", token.id}, {"text", token.text}, {"logprob", logprob_json(token.logprob)},
          {"special", token.special}};
}

json prefill_token_json(const sched::TokenInfo& token) {
  return {{"id", token.id}, {"text", token.text}, {"logprob", logprob_json(token.logprob)}};
}

}  // namespace plimsoll::api
