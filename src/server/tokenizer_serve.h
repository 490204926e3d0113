// `plimsoll serve -m FILE` where FILE is a tokenizer and no model (a
// tokenizer.json, or a GGUF without tensors): an HTTP server that answers
// /tokenize, /health, /info and /metrics and refuses generations (422),
// planned like the full server: runtime + transport + request budget within
// the memory budget, or it does not start.
#pragma once

#include <csignal>

namespace plimsoll {

struct ServeConfig;

// Whether serve's -m names a tokenizer alone (tokenizer/tokenizer_loading.h).
bool serves_tokenizer_only(const ServeConfig& config);

// Runs until one of `signals` (already blocked in every thread) arrives;
// returns the process exit code.
int run_tokenizer_serve(const ServeConfig& config, const sigset_t& signals);

}  // namespace plimsoll
