// TGI's generation routes: POST /generate (string or list inputs),
// POST /generate_stream (SSE) and POST / (either, by "stream").
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

Result<TgiCall> parse_call(RouteContext& ctx, const json& body, bool streaming) {
  TgiCall call;
  PLIMSOLL_ASSIGN(call.inputs, read_inputs(body, streaming, &call.list_input));
  sched::ServiceLimits limits = ctx.service.limits();
  PLIMSOLL_TRY(check_client_batch(call.inputs.size(), limits));
  auto params_it = body.find("parameters");
  const json* params = params_it == body.end() ? nullptr : &*params_it;
  PLIMSOLL_ASSIGN(call.parameters, parse_tgi_parameters(params, limits, streaming, ctx.config.generation_defaults));
  const TgiOptions& o = call.parameters.options;
  int64_t text_bytes = 0;
  for (const std::string& input : call.inputs) text_bytes += tokenized_bytes(input, ctx.tokenizer, limits);
  call.build_hold = ctx.service.reserve_bytes(
      sched::prompt_build_bytes(static_cast<int64_t>(call.inputs.size()), text_bytes), "tokenizing this request");
  if (!call.build_hold.ok()) return call.build_hold.rejection->error;
  call.items.reserve(call.inputs.size());
  for (const std::string& input : call.inputs) {
    sched::GenerationRequest item;
    item.params = call.parameters.sampling;  // the stop list is shared, not copied
    item.top_n_tokens = o.top_n_tokens;
    item.prompt_details = o.decoder_input_details;
    item.token_records = o.details;
    item.streamed = streaming;
    item.held_text_bytes = o.return_full_text ? static_cast<int64_t>(input.size()) : 0;
    const GenerationDefaults& d = ctx.config.generation_defaults;
    PromptPlan plan{input, o.max_new_tokens, o.truncate, false, std::nullopt, d.max_new_tokens ? std::nullopt : d.max_length};
    PLIMSOLL_TRY(build_prompt(plan, ctx.tokenizer, limits,
                              default_max_new_tokens(d, ctx.config.default_max_new_tokens), &item));
    call.items.push_back(std::move(item));
  }
  if (!o.return_full_text) call.inputs = std::vector<std::string>(call.inputs.size());
  return call;
}

json seed_json(const SamplingParams& params, uint64_t seed) {
  if (!params.samples()) return nullptr;  // TGI reports a seed only when sampling
  return seed;
}

json details_json(const TgiCall& call, const ItemOutcome& item) {
  const sched::TokenEvent& f = item.final;
  json tokens = json::array();
  for (const auto& t : item.tokens) tokens.push_back(token_json(t));
  json prefill = json::array();
  if (call.parameters.options.decoder_input_details) {
    for (const auto& t : f.prefill) prefill.push_back(prefill_token_json(t));
  }
  json details = {{"finish_reason", finish_reason_name(f.finish_reason)},
                  {"generated_tokens", f.generated_tokens},
                  {"seed", seed_json(call.parameters.sampling, f.seed)},
                  {"prefill", prefill},
                  {"tokens", tokens}};
  if (call.parameters.options.top_n_tokens > 0) {
    json top = json::array();
    for (const auto& alternatives : item.top_tokens) {
      json row = json::array();
      for (const auto& t : alternatives) row.push_back(token_json(t));
      top.push_back(row);
    }
    details["top_tokens"] = top;
  }
  return details;
}

json generate_json(const TgiCall& call, size_t index, const ItemOutcome& item) {
  std::string text = item.final.generated_text;
  if (call.parameters.options.return_full_text) text = call.inputs[index] + text;
  json out = {{"generated_text", text}};
  if (call.parameters.options.details) out["details"] = details_json(call, item);
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
    sched::TokenInfo token = event.token;
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

void generate(RouteContext& ctx, json body, bool wrap_in_list, HttpRequest& req, HttpResponse& res) {
  auto recorder = std::make_shared<RequestRecorder>(ctx.metrics);
  auto fail = [&](const ApiError& e) { recorder->fail(e); send_error(res, e); };
  Result<TgiCall> call = parse_call(ctx, body, /*streaming=*/false);
  done_with_body(body, req);  // the validated call holds what is needed
  if (!call) return fail(api_error(call.error()));
  call->build_hold = {};  // the submission's charge covers the items from here
  Submission submission;
  if (auto e = submit(ctx, std::move(call->items), *recorder, &submission)) return fail(*e);
  submission.client_gone = req.client_gone;
  std::vector<ItemOutcome> items;
  if (auto e = collect(ctx, submission, *recorder, &items, call->parameters.options.details)) return fail(*e);
  json out = json::array();
  for (size_t i = 0; i < items.size(); ++i) out.push_back(generate_json(*call, i, items[i]));
  set_generate_headers(items, res);
  recorder->succeed();
  send_json(res, dump_json(call->list_input || wrap_in_list ? out : out[0]));
}

void generate_stream(RouteContext& ctx, json body, HttpRequest& req, HttpResponse& res) {
  auto recorder = std::make_shared<RequestRecorder>(ctx.metrics);
  auto fail = [&](const ApiError& e) { recorder->fail(e); send_error(res, e); };
  Result<TgiCall> call = parse_call(ctx, body, /*streaming=*/true);
  done_with_body(body, req);
  if (!call) return fail(api_error(call.error()));
  call->build_hold = {};
  Submission submission;
  if (auto e = submit(ctx, std::move(call->items), *recorder, &submission)) return fail(*e);
  start_stream(ctx, res, std::move(submission),
               std::make_unique<TgiStreamFormatter>(std::move(*call)), recorder);
}

}  // namespace

void add_tgi_routes(RouteTable& routes, RouteContext& ctx) {
  routes.post("/generate", Access::kKey, route_edge(ctx, [&ctx](HttpRequest& req, HttpResponse& res) {
    Result<json> body = parse_request_json(req.body);
    if (!body) return send_error(res, api_error(body.error()));
    generate(ctx, std::move(*body), false, req, res);
  }));
  routes.post("/generate_stream", Access::kKey, route_edge(ctx, [&ctx](HttpRequest& req, HttpResponse& res) {
    Result<json> body = parse_request_json(req.body);
    if (!body) return send_error(res, api_error(body.error()));
    generate_stream(ctx, std::move(*body), req, res);
  }));
  // TGI's compat route: streams when "stream" is true, else a one-element list.
  routes.post("/", Access::kKey, route_edge(ctx, [&ctx](HttpRequest& req, HttpResponse& res) {
    Result<json> body = parse_request_json(req.body);
    if (!body) return send_error(res, api_error(body.error()));
    Result<std::optional<bool>> stream = FieldReader(*body).boolean("stream");
    if (!stream) return send_error(res, api_error(stream.error()));
    if (stream->value_or(false)) return generate_stream(ctx, std::move(*body), req, res);
    generate(ctx, std::move(*body), true, req, res);
  }));
}

}  // namespace plimsoll::api
