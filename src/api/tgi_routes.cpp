// TGI's generation routes: POST /generate (string or list inputs, best_of),
// POST /generate_stream (SSE) and POST / (either, by "stream"; there
// return_full_text defaults to true, as TGI for a model without a pipeline tag).
#include <nlohmann/json.hpp>

#include "api/errors.h"
#include "api/field_reader.h"
#include "api/generation.h"
#include "api/json_text.h"
#include "api/request_json.h"
#include "api/route_context.h"
#include "api/validation.h"

namespace plimsoll::api {
namespace {

// A validated TGI request, ready to submit.
struct TgiCall {
  std::vector<std::string> inputs;  // kept only for return_full_text
  bool list_input = false;
  TgiParameters parameters;
  std::vector<sched::GenerationRequest> items;
  sched::ByteReservation build_hold;  // the prompts' tokenization, until the items are submitted
};

Result<std::vector<std::string>> read_inputs(const json& body, bool streaming, bool* list_input) {
  FieldReader f(body);
  if (!body.is_object()) {
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("the request body must be a JSON object, got ") + json_type_name(body));
  }
  const json* inputs = f.raw("inputs");
  if (!inputs) return make_error(ErrorCode::kInvalidArgument, "`inputs` is required");
  *list_input = inputs->is_array();
  if (*list_input && streaming) {
    return make_error(ErrorCode::kInvalidArgument, "`inputs` must be a string when streaming");
  }
  Result<std::optional<std::vector<std::string>>> list = f.strings("inputs", /*single_ok=*/true);
  if (!list) return list.error();
  return list->value_or(std::vector<std::string>{});
}

// Details are answered with `details` or `decoder_input_details` (TGI).
bool wants_details(const TgiOptions& o) { return o.details || o.decoder_input_details; }

Result<TgiCall> parse_call(RouteContext& ctx, const json& body, std::string_view body_text, bool streaming,
                           bool default_full_text) {
  TgiCall call;
  PLIMSOLL_ASSIGN(call.inputs, read_inputs(body, streaming, &call.list_input));
  sched::ServiceLimits limits = ctx.service.limits();
  auto params_it = body.find("parameters");
  const json* params = params_it == body.end() ? nullptr : &*params_it;
  PLIMSOLL_ASSIGN(call.parameters, parse_tgi_parameters(params, limits, streaming, ctx.config.generation_defaults,
                                                        default_full_text, body_text, ctx.grammars));
  const TgiOptions& o = call.parameters.options;
  PLIMSOLL_TRY(check_client_batch(call.inputs.size() * static_cast<size_t>(o.best_of), limits));
  int64_t text_bytes = 0;
  for (const std::string& input : call.inputs) text_bytes += tokenized_bytes(input, ctx.tokenizer, limits);
  const int64_t n_items = static_cast<int64_t>(call.inputs.size()) * o.best_of;
  call.build_hold = ctx.service.reserve_bytes(sched::prompt_build_bytes(n_items, o.best_of * text_bytes),
                                              "tokenizing this request", sched::BackstopCheck::kAtSubmit);
  if (!call.build_hold.ok()) return call.build_hold.rejection->error;
  call.items.reserve(static_cast<size_t>(n_items));
  for (const std::string& input : call.inputs) {
    sched::GenerationRequest item;
    item.params = call.parameters.sampling;  // the stop list is shared, not copied
    item.top_n_tokens = o.top_n_tokens;
    item.priority = o.priority;
    item.prompt_details = o.decoder_input_details;
    item.token_records = wants_details(o);
    item.streamed = streaming;
    // The prompt text again in each answer: the chosen one and best_of_sequences.
    item.held_text_bytes = o.return_full_text ? static_cast<int64_t>(input.size()) : 0;
    const GenerationDefaults& d = ctx.config.generation_defaults;
    PromptPlan plan{input, o.max_new_tokens, o.truncate, false, std::nullopt, d.max_new_tokens ? std::nullopt : d.max_length};
    PLIMSOLL_TRY(build_prompt(plan, ctx.tokenizer, limits,
                              default_max_new_tokens(d, ctx.config.default_max_new_tokens), &item));
    for (int64_t k = 1; k < o.best_of; ++k) call.items.push_back(item);  // each draws its own seed
    call.items.push_back(std::move(item));
  }
  if (!o.return_full_text) call.inputs = std::vector<std::string>(call.inputs.size());
  return call;
}

json seed_json(const SamplingParams& params, uint64_t seed) {
  if (!params.samples()) return nullptr;  // TGI reports a seed only when sampling
  return seed;
}

json tokens_json(const std::vector<sched::TokenInfo>& tokens) {
  json out = json::array();
  for (const auto& t : tokens) out.push_back(token_json(t));
  return out;
}

json top_tokens_json(const std::vector<std::vector<sched::TokenInfo>>& rows) {
  json top = json::array();
  for (const auto& alternatives : rows) top.push_back(tokens_json(alternatives));
  return top;
}

json prefill_json(const TgiCall& call, const ItemOutcome& item) {
  json prefill = json::array();
  if (call.parameters.options.decoder_input_details) {
    for (const auto& t : item.prefill) prefill.push_back(prefill_token_json(t));
  }
  return prefill;
}

std::string full_text(const TgiCall& call, size_t input, const ItemOutcome& item) {
  const std::string& text = item.final.generated_text;
  return call.parameters.options.return_full_text ? call.inputs[input] + text : text;
}

// TGI's BestOfSequence: one of the other best_of answers.
json best_of_sequence_json(const TgiCall& call, size_t input, const ItemOutcome& item) {
  const sched::TokenEvent& f = item.final;
  json out = {{"generated_text", full_text(call, input, item)},
              {"finish_reason", finish_reason_name(f.finish_reason)},
              {"generated_tokens", f.generated_tokens},
              {"seed", seed_json(call.parameters.sampling, f.seed)},
              {"prefill", prefill_json(call, item)},
              {"tokens", tokens_json(item.tokens)}};
  out["top_tokens"] = call.parameters.options.top_n_tokens > 0 ? top_tokens_json(item.top_tokens) : json::array();
  return out;
}

// `others`: the rest of this input's best_of answers (best_of > 1 only).
json details_json(const TgiCall& call, size_t input, const ItemOutcome& item, const std::vector<const ItemOutcome*>& others) {
  const sched::TokenEvent& f = item.final;
  json details = {{"finish_reason", finish_reason_name(f.finish_reason)},
                  {"generated_tokens", f.generated_tokens},
                  {"seed", seed_json(call.parameters.sampling, f.seed)},
                  {"prefill", prefill_json(call, item)},
                  {"tokens", tokens_json(item.tokens)}};
  if (call.parameters.options.best_of > 1) {
    json sequences = json::array();
    for (const ItemOutcome* other : others) sequences.push_back(best_of_sequence_json(call, input, *other));
    details["best_of_sequences"] = std::move(sequences);
  }
  if (call.parameters.options.top_n_tokens > 0) details["top_tokens"] = top_tokens_json(item.top_tokens);
  return details;
}

// One input's answer from its best_of items [first, first + best_of).
json generate_json(const TgiCall& call, size_t input, const std::vector<ItemOutcome>& items) {
  const size_t best_of = static_cast<size_t>(call.parameters.options.best_of);
  const size_t first = input * best_of;
  size_t best = first;
  for (size_t i = first + 1; i < first + best_of; ++i) {
    if (mean_logprob(items[i]) > mean_logprob(items[best])) best = i;
  }
  std::vector<const ItemOutcome*> others;
  for (size_t i = first; i < first + best_of; ++i) {
    if (i != best) others.push_back(&items[i]);
  }
  json out = {{"generated_text", full_text(call, input, items[best])}};
  if (wants_details(call.parameters.options)) out["details"] = details_json(call, input, items[best], others);
  return out;
}

// TGI's timing and token-count response headers (times in milliseconds).
void set_generate_headers(const std::vector<ItemOutcome>& items, HttpResponse& res) {
  int64_t prompt_tokens = 0, generated_tokens = 0;
  double queue_s = 0, inference_s = 0;
  for (const ItemOutcome& item : items) {
    prompt_tokens += item.final.input_tokens;
    generated_tokens += item.final.generated_tokens;
    queue_s = std::max(queue_s, item.final.queue_seconds);
    inference_s = std::max(inference_s, item.final.inference_seconds);
  }
  auto ms = [](double s) { return std::to_string(static_cast<int64_t>(s * 1000.0)); };
  res.set_header("x-prompt-tokens", std::to_string(prompt_tokens));
  res.set_header("x-generated-tokens", std::to_string(generated_tokens));
  res.set_header("x-queue-time", ms(queue_s));
  res.set_header("x-inference-time", ms(inference_s));
  if (generated_tokens > 0) res.set_header("x-time-per-token", ms(inference_s / double(generated_tokens)));
}

class TgiStreamFormatter final : public StreamFormatter {
 public:
  explicit TgiStreamFormatter(TgiCall call) : call_(std::move(call)) {}

  std::string on_event(const sched::TokenEvent& event, bool* end) override {
    if (event.error) {
      *end = true;
      return sse_frame(error_body(api_error(*event.error)), false);
    }
    ++index_;
    sched::TokenInfo token = reported_token(event, TokenText::kAdded);
    if (token.id < 0) token = sched::TokenInfo{-1, NAN, "", true};  // a final without a token
    json out = {{"index", index_}, {"token", token_json(token)}};
    if (!event.top_tokens.empty()) {
      json top = json::array();
      for (const auto& t : event.top_tokens) top.push_back(token_json(t));
      out["top_tokens"] = top;
    }
    out["generated_text"] = nullptr;
    out["details"] = nullptr;
    if (event.final) finish(event, &out);
    return sse_frame(dump_json(out), false);
  }
  std::string on_finish() override { return ""; }

 private:
  void finish(const sched::TokenEvent& event, json* out) const {
    std::string text = event.generated_text;
    if (call_.parameters.options.return_full_text) text = call_.inputs[0] + text;
    (*out)["generated_text"] = text;
    if (!call_.parameters.options.details) return;
    (*out)["details"] = {{"finish_reason", finish_reason_name(event.finish_reason)},
                         {"generated_tokens", event.generated_tokens},
                         {"seed", seed_json(call_.parameters.sampling, event.seed)},
                         {"input_length", event.input_tokens}};
  }

  TgiCall call_;
  int64_t index_ = 0;
};

// The JSON tree and the body are freed once the call is validated.
void done_with_body(json& body, HttpRequest& req) {
  release_json(body);
  req.release_body();
}

// A request after its preparation: submitted, or failed with what to answer.
struct Prepared {
  std::optional<TgiCall> call;
  Submission submission;
  std::shared_ptr<RequestRecorder> recorder;  // set once the body parsed
  bool streaming = false;
  std::optional<ApiError> failure;
};

// The preparation stage (route_context.h's prepare): body -> validated call ->
// submitted. `streaming` unset: the body's "stream" decides (TGI's "/").
Prepared prepare_tgi(RouteContext& ctx, HttpRequest& req, std::optional<bool> streaming, bool compat) {
  Prepared p;
  const Status status = prepare(ctx, req, [&]() -> Status {
    PLIMSOLL_ASSIGN(json body, parse_request_json(req.body, req.body_reservation));
    if (streaming) {
      p.streaming = *streaming;
    } else {
      PLIMSOLL_ASSIGN(std::optional<bool> stream, FieldReader(body).boolean("stream"));
      p.streaming = stream.value_or(false);
    }
    p.recorder = std::make_shared<RequestRecorder>(ctx.metrics);
    Result<TgiCall> call = parse_call(ctx, body, req.body, p.streaming, /*default_full_text=*/compat);
    done_with_body(body, req);  // the validated call holds what is needed
    if (!call) return call.error();
    call->build_hold = {};  // the submission's charge covers the items from here
    if (auto e = submit(ctx, req, std::move(call->items), *p.recorder, &p.submission)) {
      p.failure = *e;
      return {};
    }
    p.call = std::move(*call);
    return {};
  });
  if (!status.ok()) p.failure = api_error(status.error());
  if (p.failure && p.recorder) p.recorder->fail(*p.failure);
  return p;
}

void generate(RouteContext& ctx, Prepared p, bool compat, HttpRequest& req, HttpResponse& res) {
  p.submission.client_gone = req.client_gone;
  std::vector<ItemOutcome> items;
  const TgiCall& call = *p.call;
  if (auto e = collect(ctx, p.submission, *p.recorder, &items, wants_details(call.parameters.options),
                       TokenText::kAdded)) {
    p.recorder->fail(*e);
    return send_error(res, *e);
  }
  json out = json::array();
  for (size_t i = 0; i < call.inputs.size(); ++i) out.push_back(generate_json(call, i, items));
  set_generate_headers(items, res);
  p.recorder->succeed();
  send_json(res, dump_json(call.list_input || compat ? out : out[0]));
}

void generate_stream(RouteContext& ctx, Prepared p, HttpResponse& res) {
  start_stream(ctx, res, std::move(p.submission), std::make_unique<TgiStreamFormatter>(std::move(*p.call)),
               p.recorder);
}

// One TGI generation route: prepared, then answered whole or streamed.
void serve_tgi(RouteContext& ctx, HttpRequest& req, HttpResponse& res, std::optional<bool> streaming, bool compat) {
  Prepared p = prepare_tgi(ctx, req, streaming, compat);
  if (p.failure) return send_error(res, *p.failure);
  if (p.streaming) return generate_stream(ctx, std::move(p), res);
  generate(ctx, std::move(p), compat, req, res);
}

}  // namespace

void add_tgi_routes(RouteTable& routes, RouteContext& ctx) {
  routes.post("/generate", Access::kKey, route_edge(ctx, [&ctx](HttpRequest& req, HttpResponse& res) {
    serve_tgi(ctx, req, res, false, false);
  }));
  routes.post("/generate_stream", Access::kKey, route_edge(ctx, [&ctx](HttpRequest& req, HttpResponse& res) {
    serve_tgi(ctx, req, res, true, false);
  }));
  // TGI's compat route: streams when "stream" is true, else a one-element list.
  routes.post("/", Access::kKey, route_edge(ctx, [&ctx](HttpRequest& req, HttpResponse& res) {
    serve_tgi(ctx, req, res, std::nullopt, true);
  }));
}

}  // namespace plimsoll::api
