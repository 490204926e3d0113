// libFuzzer target for the request path of src/api, without a network: body
// bytes -> JSON -> TGI `parameters` / OpenAI completions and chat calls ->
// validated GenerationRequests, as tgi_routes.cpp and openai_routes.cpp do it.
// The first input byte picks the route, the rest is the body. Checks: nothing
// but the JSON parser throws; every refusal is a non-empty 422 whose body is
// valid JSON; every accepted item respects the published limits. Parameters
// the API accepts but the engine's SamplingParams::validate() would refuse are
// printed once per kind (a 422 with a misleading message, not a crash).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "api/field_reader.h"
#include "api/openai_params.h"
#include "api/route_context.h"
#include "api/request_json.h"
#include "api/validation.h"
#include "engine/grammar/grammar_sources.h"
#include "fuzz_target.h"
#include "grammar_budget.h"
#include "metrics/registry.h"
#include "metrics/server_metrics.h"
#include "tokenizer/tokenizer.h"

namespace plimsoll {
namespace {

using api::json;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "request_fuzz: check failed: %s\n", what);
    std::abort();
  }
}

// Never submits: the parsing path only reads limits().
class StubService final : public sched::GenerationService {
 public:
  StubService() {
    limits_.model_id = "fuzz";
    limits_.max_input_tokens = 64;
    limits_.max_total_tokens = 96;
    limits_.max_batch_total_tokens = 4096;
    limits_.max_concurrent_requests = 128;
    limits_.max_client_batch_size = 0;  // as plimsoll serve publishes it: lists of any length
    limits_.max_stop_sequences = 4;
    limits_.max_top_n_tokens = 5;
  }
  sched::SubmitResult submit(std::vector<sched::GenerationRequest>, sched::EventSink) override {
    std::abort();
  }
  void cancel(uint64_t) override {}
  sched::ServiceLimits limits() const override { return limits_; }
  sched::ServiceStats stats() const override { return {}; }
  bool ready() const override { return true; }

  sched::ServiceLimits limits_;
};

// <unk> <s> </s>, 256 byte tokens, "▁" and a..z: every input encodes (byte fallback).
Tokenizer synthetic_tokenizer() {
  Vocab v;
  auto add = [&](std::string piece, TokenType type) {
    v.pieces.push_back(std::move(piece));
    v.scores.push_back(0.0f);
    v.types.push_back(type);
  };
  add("<unk>", TokenType::kUnknown);
  add("<s>", TokenType::kControl);
  add("</s>", TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    add(name, TokenType::kByte);
  }
  add("\xE2\x96\x81", TokenType::kNormal);
  for (char c = 'a'; c <= 'z'; ++c) add(std::string(1, c), TokenType::kNormal);
  v.bos_id = 1;
  v.eos_id = 2;
  Result<Tokenizer> t = Tokenizer::create(std::move(v));
  check(t.ok(), "synthetic tokenizer");
  return std::move(t).value();
}

struct World {
  World()
      : tokenizer(synthetic_tokenizer()),
        metrics(registry),
        ctx{config, service, tokenizer, metrics, api::ChatPromptFormat{}} {
    config.default_max_new_tokens = 20;
    config.default_completion_max_tokens = 16;
    config.max_n = 8;  // smaller than the server's 128 so prompt x n lists stay cheap
  }
  api::ApiConfig config;
  StubService service;
  Tokenizer tokenizer;
  metrics::MetricsRegistry registry;
  metrics::ServerMetrics metrics;
  api::RouteContext ctx;
};

World& world() {
  static World* w = new World();
  return *w;
}

// A copy of the checks of SamplingParams::validate() (src/engine/sampler.cpp),
// so this target does not link the engine. Returns the first refused field.
const char* engine_refuses(const SamplingParams& s) {
  if (!(s.temperature >= 0.0f) || !std::isfinite(s.temperature)) return "temperature";
  if (s.top_k < 0) return "top_k";
  if (!(s.top_p > 0.0f && s.top_p <= 1.0f)) return "top_p";
  if (!(s.typical_p > 0.0f && s.typical_p <= 1.0f)) return "typical_p";
  if (!(s.repetition_penalty > 0.0f) || !std::isfinite(s.repetition_penalty)) return "repetition_penalty";
  if (!std::isfinite(s.frequency_penalty) || s.frequency_penalty < -2.0f || s.frequency_penalty > 2.0f) {
    return "frequency_penalty";
  }
  if (!std::isfinite(s.presence_penalty) || s.presence_penalty < -2.0f || s.presence_penalty > 2.0f) {
    return "presence_penalty";
  }
  return nullptr;
}

void note_engine_mismatch(const SamplingParams& s, std::string_view body) {
  static std::vector<std::string> seen;
  const char* field = engine_refuses(s);
  if (!field) return;
  for (const std::string& f : seen) {
    if (f == field) return;
  }
  seen.emplace_back(field);
  std::fprintf(stderr, "request_fuzz: note: the API accepts `%s` that the engine refuses; body: %.*s\n",
               field, static_cast<int>(std::min<size_t>(body.size(), 300)), body.data());
}

void check_refusal(const Error& error) {
  check(!error.message.empty(), "a refusal has a message");
  const api::ApiError e = api::api_error(error);
  check(e.status == 422, "a parsing refusal is 422");
  const json body = json::parse(api::error_body(e));  // throws (and aborts) if not valid JSON
  check(body.at("error").get<std::string>().size() > 0, "error body names the problem");
}

void check_item(const sched::GenerationRequest& r, const sched::ServiceLimits& limits, int64_t vocab,
                std::string_view body) {
  const auto n_in = static_cast<int64_t>(r.prompt_ids.size());
  check(n_in > 0, "an accepted prompt has tokens");
  check(n_in <= limits.max_input_tokens, "accepted prompt within max_input_tokens");
  for (const int32_t id : r.prompt_ids) check(id >= 0 && id < vocab, "prompt ids in the vocabulary");
  check(r.params.max_new_tokens >= 1, "max_new_tokens >= 1");
  check(n_in + r.params.max_new_tokens <= limits.max_total_tokens, "prompt + new tokens within max_total_tokens");
  check(static_cast<int64_t>(r.params.stop.size()) <= limits.max_stop_sequences, "stop count within limit");
  for (const std::string& s : r.params.stop) check(!s.empty(), "no empty stop sequence");
  check(r.top_n_tokens >= 0 && r.top_n_tokens <= limits.max_top_n_tokens, "top_n_tokens within limit");
  check(r.params.top_k >= 0, "top_k >= 0");
  note_engine_mismatch(r.params, body);
}

// tgi_routes.cpp's parse_call (read_inputs is file-local there; mirrored here).
void fuzz_tgi(const json& body, bool streaming, std::string_view text) {
  World& w = world();
  const sched::ServiceLimits limits = w.service.limits();
  auto run = [&]() -> Status {
    if (!body.is_object()) return make_error(ErrorCode::kInvalidArgument, "not an object");
    api::FieldReader f(body);
    const json* inputs = f.raw("inputs");
    if (!inputs) return make_error(ErrorCode::kInvalidArgument, "`inputs` is required");
    if (inputs->is_array() && streaming) return make_error(ErrorCode::kInvalidArgument, "list when streaming");
    PLIMSOLL_ASSIGN(auto list, f.strings("inputs", true));
    const std::vector<std::string> prompts = list.value_or(std::vector<std::string>{});
    PLIMSOLL_TRY(api::check_client_batch(prompts.size(), limits));
    auto it = body.find("parameters");
    PLIMSOLL_ASSIGN(api::TgiParameters p,
                    api::parse_tgi_parameters(it == body.end() ? nullptr : &*it, limits, streaming));
    check(p.options.top_n_tokens >= 0 && p.options.top_n_tokens <= limits.max_top_n_tokens, "top_n in range");
    for (const std::string& input : prompts) {
      sched::GenerationRequest item;
      item.params = p.sampling;
      item.top_n_tokens = p.options.top_n_tokens;
      api::PromptPlan plan{input, p.options.max_new_tokens, p.options.truncate, false};
      PLIMSOLL_TRY(api::build_prompt(plan, w.tokenizer, limits, w.config.default_max_new_tokens, &item));
      check_item(item, limits, w.tokenizer.vocab_size(), text);
    }
    return {};
  };
  Status st = run();
  if (!st.ok()) check_refusal(st.error());
}

void fuzz_openai(const json& body, bool chat, std::string_view text) {
  World& w = world();
  Result<api::OpenAiCall> call = chat ? api::parse_chat_call(w.ctx, body, text) : api::parse_completion_call(w.ctx, body, text);
  if (!call.ok()) return check_refusal(call.error());
  check(call->n >= 1 && call->n <= w.config.max_n, "n in range");
  check(!call->prompts.empty(), "at least one prompt");
  check(call->best_of >= call->n && call->best_of <= w.config.max_n, "best_of in [n, max_n]");
  check(call->items.size() == call->prompts.size() * static_cast<size_t>(call->best_of), "items = prompts x best_of");
  check(call->top_logprobs >= 0 && call->top_logprobs <= w.service.limits_.max_top_n_tokens, "logprobs in range");
  for (const auto& item : call->items) check_item(item, w.service.limits(), w.tokenizer.vocab_size(), text);
}

}  // namespace
}  // namespace plimsoll

// Once per process, before any input: the world (tokenizer, metrics) and the
// json_object grammar, which the API compiles once and shares (not per request).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)plimsoll::world();
  (void)plimsoll::grammar_any_json_object(plimsoll::GrammarLimits{});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using plimsoll::api::json;
  if (size == 0) return 0;
  const int route = data[0] % 5;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  // The routes' parse_request_json: bounded nesting (64) and tree bytes (32 per
  // body byte + 4 KiB); a refusal is the route's 422.
  plimsoll::Result<json> parsed = plimsoll::api::parse_request_json(text);
  if (!parsed.ok()) return 0;
  json body = std::move(parsed).value();
  // Past the parser nothing may throw: the route edge would turn a stray
  // json::exception into a 422 that names no field, anything else into a 500.
  switch (route) {
    case 0: plimsoll::fuzz_tgi(body, false, text); break;
    case 1: plimsoll::fuzz_tgi(body, true, text); break;
    case 2: plimsoll::fuzz_openai(body, false, text); break;
    case 3: plimsoll::fuzz_openai(body, true, text); break;
    default: {
      // POST / reads `stream` first, then goes either way.
      plimsoll::api::FieldReader f(body);
      auto stream = f.boolean("stream");
      if (stream.ok()) plimsoll::fuzz_tgi(body, stream->value_or(false), text);
      break;
    }
  }
  return 0;
}

namespace plimsoll::fuzz {

// The byte budget: the body's JSON tree, at most 32 B per body byte + 4 KiB
// (parse_request_json enforces it), the body's prompts copied into the call
// (strings, their token ids at 4 B per byte at most before the limit check)
// and its items (a GenerationRequest per prompt x best_of): 96 B per input byte;
// 1 MiB fixed for the tokenizer's and validation's scratch; and a grammar
// compile (response_format, TGI grammar, tools), as regex_fuzz/schema_fuzz
// bound it (grammar_budget.h, + 320 B per input byte).
const TargetInfo& target_info() {
  static const TargetInfo info = [] {
    TargetInfo t;
    t.name = "request";
    // The first byte picks the route (% 5): 0 /generate, 1 /generate_stream,
    // 2 /v1/completions, 3 /v1/chat/completions, 4 POST / (reads `stream`).
    t.seeds = {
        std::string(1, '\0') + R"({"inputs":"hello world"})",
        std::string(1, '\0') + R"({"inputs":"abc","parameters":{"max_new_tokens":5,"temperature":0.7,"top_k":10,)"
                                R"("top_p":0.9,"stop":["x","yz"],"seed":42,"do_sample":true,"details":true,)"
                                R"("decoder_input_details":true,"top_n_tokens":2,"truncate":8,)"
                                R"("repetition_penalty":1.1,"return_full_text":false,"watermark":false}})",
        std::string(1, '\0') + R"({"inputs":["a","b","c"],"parameters":{"max_new_tokens":1}})",
        std::string(1, '\1') + R"({"inputs":"stream me","parameters":{"max_new_tokens":3}})",
        std::string(1, '\2') + R"({"model":"fuzz","prompt":"once upon","max_tokens":4,"n":2,"logprobs":2,)"
                                R"("echo":true,"stop":"\n","temperature":0,"stream":false})",
        std::string(1, '\2') + R"({"prompt":["a","b"],"max_tokens":1,"presence_penalty":-2,"frequency_penalty":2,)"
                                R"("logit_bias":{"5":-100},"user":"u","best_of":1,"seed":7})",
        std::string(1, '\3') + R"({"model":"fuzz","messages":[{"role":"system","content":"be brief"},)"
                                R"({"role":"user","content":"hi"}],"max_tokens":8,"logprobs":true,"top_logprobs":3})",
        std::string(1, '\3') + R"({"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],)"
                                R"("response_format":{"type":"json_object"},"stream":true,)"
                                R"("stream_options":{"include_usage":true}})",
        std::string(1, '\3') + R"({"messages":[{"role":"user","content":"q"}],"tools":[{"type":"function",)"
                                R"("function":{"name":"f","parameters":{"type":"object","properties":)"
                                R"({"a":{"type":"string"}}}}}],"tool_choice":"auto"})",
        std::string(1, '\3') + R"({"messages":[{"role":"user","content":"q"}],"response_format":{"type":)"
                                R"("json_schema","json_schema":{"name":"s","schema":{"type":"object",)"
                                R"("properties":{"n":{"type":"integer"}},"required":["n"]}}}})",
        std::string(1, '\4') + R"({"inputs":"x","stream":true,"parameters":{"max_new_tokens":2}})",
        std::string(1, '\0') + R"({"inputs":"x","parameters":{"grammar":{"type":"regex","value":"[ab]+"}}})",
        std::string(1, '\0') + R"({"inputs":"x","parameters":{"grammar":{"type":"json","value":)"
                                R"({"type":"array","items":{"type":"boolean"}}}}})",
    };
    t.dictionary = {R"("inputs")", R"("parameters")", R"("max_new_tokens")", R"("temperature")", R"("top_k")",
                    R"("top_p")", R"("typical_p")", R"("stop")", R"("seed")", R"("truncate")", R"("top_n_tokens")",
                    R"("repetition_penalty")", R"("frequency_penalty")", R"("presence_penalty")", R"("grammar")",
                    R"("details")", R"("stream")", R"("model")", R"("prompt")", R"("messages")", R"("role")",
                    R"("content")", R"("max_tokens")", R"("n")", R"("logprobs")", R"("top_logprobs")",
                    R"("response_format")", R"("json_schema")", R"("tools")", R"("tool_choice")", R"("logit_bias")",
                    R"("echo")", R"("user")", R"("system")", R"("assistant")", R"("tool")", R"("text")",
                    R"("type")", R"("regex")", R"("json")", R"("value")", "null", "true", "false", "[]", "{}",
                    R"("\u0000")", R"("\ud83d\ude00")", R"("\xzz")", ",", ":"};
    t.nests = {{"[", "]"}, {R"({"a":)", "}"}, {R"({"inputs":)", "}"}, {R"([{"role":"user","content":)", "}]"}};
    t.budget_fixed_bytes = (int64_t{1} << 20) + grammar_compile_budget_bytes();
    t.budget_per_input_byte = 96 + 320;
    t.max_input_bytes = 65536;
    return t;
  }();
  return info;
}

}  // namespace plimsoll::fuzz
