// Validation of OpenAI fields (ranges as OpenAI documents them, messages in
// TGI's style) and the prompt x n expansion into GenerationRequests.
#include "api/openai_params.h"

#include "api/field_reader.h"

namespace plimsoll::api {
namespace {

Error invalid(std::string message) { return make_error(ErrorCode::kInvalidArgument, std::move(message)); }

Status read_sampling(const FieldReader& f, const GenerationDefaults& model_defaults, SamplingParams* s) {
  apply_generation_defaults(model_defaults, s);
  PLIMSOLL_ASSIGN(auto temperature, f.number("temperature"));
  PLIMSOLL_ASSIGN(auto top_p, f.number("top_p"));
  PLIMSOLL_ASSIGN(auto presence, f.number("presence_penalty"));
  PLIMSOLL_ASSIGN(auto frequency, f.number("frequency_penalty"));
  PLIMSOLL_ASSIGN(auto seed, f.unsigned_integer("seed"));
  PLIMSOLL_ASSIGN(auto stop, f.strings("stop", /*single_ok=*/true));
  PLIMSOLL_ASSIGN(auto ignore_eos, f.boolean("ignore_eos"));  // llama.cpp's and vLLM's extension
  if (temperature && !(*temperature >= 0.0 && *temperature <= 2.0)) {
    return invalid("`temperature` must be >= 0.0 and <= 2.0");
  }
  if (top_p && !(*top_p > 0.0 && *top_p <= 1.0)) return invalid("`top_p` must be > 0.0 and <= 1.0");
  if (presence && !(*presence >= -2.0 && *presence <= 2.0)) {
    return invalid("`presence_penalty` must be >= -2.0 and <= 2.0");
  }
  if (frequency && !(*frequency >= -2.0 && *frequency <= 2.0)) {
    return invalid("`frequency_penalty` must be >= -2.0 and <= 2.0");
  }
  // OpenAI samples at temperature 1 by default; 0 means greedy. A model whose
  // generation_config.json says do_sample keeps its own choice (and warpers,
  // applied before this) when the request sets no temperature.
  if (temperature || !model_defaults.do_sample) {
    const double t = temperature.value_or(1.0);
    s->do_sample = t > 0.0;
    s->temperature = t > 0.0 ? static_cast<float>(t) : 1.0f;
    if (!s->do_sample) s->top_k = 0, s->top_p = 1.0f, s->typical_p = 1.0f;  // the model's warpers too
  }
  if (top_p) s->top_p = static_cast<float>(*top_p);
  s->presence_penalty = static_cast<float>(presence.value_or(0.0));
  s->frequency_penalty = static_cast<float>(frequency.value_or(0.0));
  s->seed = seed;
  if (stop) s->stop = std::move(*stop);
  s->ignore_eos = ignore_eos.value_or(false);
  return {};
}

Status read_unsupported(const FieldReader& f) {
  for (const char* key : {"suffix", "tools", "tool_choice", "functions", "response_format"}) {
    if (f.raw(key)) return invalid(std::string("`") + key + "` is not supported by this server");
  }
  PLIMSOLL_ASSIGN(auto best_of, f.integer("best_of"));
  if (best_of && *best_of != 1) return invalid("`best_of` != 1 is not supported by this server");
  return {};
}

Status read_common(RouteContext& ctx, const FieldReader& f, OpenAiCall* call) {
  PLIMSOLL_TRY(read_unsupported(f));
  PLIMSOLL_TRY(read_sampling(f, ctx.config.generation_defaults, &call->sampling));
  PLIMSOLL_ASSIGN(auto n, f.integer("n"));
  PLIMSOLL_ASSIGN(auto stream, f.boolean("stream"));
  if (n && (*n < 1 || *n > ctx.config.max_n)) {
    return invalid("`n` must be >= 1 and <= " + std::to_string(ctx.config.max_n) +
                   ". Given: " + std::to_string(*n));
  }
  call->n = n.value_or(1);
  call->stream = stream.value_or(false);
  if (const json* options = f.raw("stream_options")) {
    PLIMSOLL_ASSIGN(auto usage, FieldReader(*options).boolean("include_usage"));
    call->include_usage = usage.value_or(false);
  }
  return check_stop(call->sampling.stop, ctx.service.limits());
}

Result<std::optional<int64_t>> read_max_tokens(const FieldReader& f, const char* key) {
  PLIMSOLL_ASSIGN(auto max_tokens, f.integer(key));
  if (max_tokens && *max_tokens <= 0) return invalid(std::string("`") + key + "` must be strictly positive");
  return max_tokens;
}

// prompts x n GenerationRequests, each prompt checked against the limits.
Status expand(RouteContext& ctx, std::optional<int64_t> max_tokens, int64_t default_max_tokens,
              bool parse_special, std::optional<bool> add_special, OpenAiCall* call) {
  sched::ServiceLimits limits = ctx.service.limits();
  PLIMSOLL_TRY(check_client_batch(call->prompts.size() * static_cast<size_t>(call->n), limits));
  int64_t text_bytes = 0;
  for (const std::string& prompt : call->prompts) text_bytes += tokenized_bytes(prompt, ctx.tokenizer, limits);
  const int64_t n_items = static_cast<int64_t>(call->prompts.size()) * call->n;
  call->build_hold = ctx.service.reserve_bytes(sched::prompt_build_bytes(n_items, call->n * text_bytes),
                                               "tokenizing this request");
  if (!call->build_hold.ok()) return call->build_hold.rejection->error;
  call->items.reserve(static_cast<size_t>(n_items));
  for (const std::string& prompt : call->prompts) {
    sched::GenerationRequest item;
    item.params = call->sampling;  // the stop list is shared, not copied
    item.top_n_tokens = call->top_logprobs;
    item.token_records = call->logprobs;
    item.streamed = call->stream;
    const GenerationDefaults& d = ctx.config.generation_defaults;
    PromptPlan plan{prompt, max_tokens, std::nullopt, parse_special, add_special,
                    d.max_new_tokens ? std::nullopt : d.max_length};
    PLIMSOLL_TRY(build_prompt(plan, ctx.tokenizer, limits, default_max_new_tokens(d, default_max_tokens), &item));
    call->prompt_tokens += static_cast<int64_t>(item.prompt_ids.size());
    for (int64_t j = 0; j < call->n; ++j) {
      sched::GenerationRequest copy = item;
      if (copy.params.seed && j > 0) *copy.params.seed += static_cast<uint64_t>(j);  // n distinct choices
      copy.held_text_bytes = call->echo ? static_cast<int64_t>(prompt.size()) : 0;  // echoed in each choice
      call->items.push_back(std::move(copy));
    }
  }
  call->item_count = call->items.size();
  if (!call->echo) call->prompts.assign(call->prompts.size(), std::string());
  return {};
}

// `content` may be null (absent). Read in place: a request tree is never copied.
Result<std::string> message_text(const json* content_or_null) {
  if (!content_or_null) return std::string();
  const json& content = *content_or_null;
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return invalid("`messages[].content` must be a string or a list of parts");
  std::string text;
  for (const json& part : content) {
    FieldReader f(part);
    PLIMSOLL_ASSIGN(auto type, f.string("type"));
    PLIMSOLL_ASSIGN(auto part_text, f.string("text"));
    if (type.value_or("") != "text" || !part_text) {
      return invalid("`messages[].content` parts must be {\"type\": \"text\", \"text\": ...}");
    }
    text += *part_text;
  }
  return text;
}

Result<std::vector<ChatMessage>> read_messages(const FieldReader& f) {
  const json* messages = f.raw("messages");
  if (!messages || !messages->is_array() || messages->empty()) {
    return invalid("`messages` must be a non-empty list");
  }
  std::vector<ChatMessage> out;
  for (const json& m : *messages) {
    FieldReader mf(m);
    PLIMSOLL_ASSIGN(auto role, mf.string("role"));
    if (!role) return invalid("`messages[].role` is required");
    PLIMSOLL_ASSIGN(std::string text, message_text(mf.raw("content")));
    out.push_back({*role, std::move(text)});
  }
  return out;
}

}  // namespace

Result<OpenAiCall> parse_completion_call(RouteContext& ctx, const json& body) {
  if (!body.is_object()) return invalid("the request body must be a JSON object");
  FieldReader f(body);
  OpenAiCall call;
  PLIMSOLL_TRY(read_common(ctx, f, &call));
  PLIMSOLL_ASSIGN(auto prompts, f.strings("prompt", /*single_ok=*/true));
  if (!prompts || prompts->empty()) return invalid("`prompt` must be a string or a non-empty list of strings");
  call.prompts = std::move(*prompts);
  PLIMSOLL_ASSIGN(auto echo, f.boolean("echo"));
  PLIMSOLL_ASSIGN(auto logprobs, f.integer("logprobs"));
  const int64_t max_top = ctx.service.limits().max_top_n_tokens;
  if (logprobs && (*logprobs < 0 || *logprobs > max_top)) {
    return invalid("`logprobs` must be >= 0 and <= " + std::to_string(max_top) +
                   ". Given: " + std::to_string(*logprobs));
  }
  call.echo = echo.value_or(false);
  call.logprobs = logprobs.has_value();
  call.top_logprobs = static_cast<int32_t>(logprobs.value_or(0));
  PLIMSOLL_ASSIGN(auto max_tokens, read_max_tokens(f, "max_tokens"));
  PLIMSOLL_TRY(expand(ctx, max_tokens, ctx.config.default_completion_max_tokens, false, std::nullopt, &call));
  return call;
}

Result<OpenAiCall> parse_chat_call(RouteContext& ctx, const json& body) {
  if (!body.is_object()) return invalid("the request body must be a JSON object");
  FieldReader f(body);
  OpenAiCall call;
  call.chat = true;
  PLIMSOLL_TRY(read_common(ctx, f, &call));
  PLIMSOLL_ASSIGN(auto messages, read_messages(f));
  const ChatTemplateFn& render = ctx.chat.render ? ctx.chat.render : default_chat_template;
  // A rendered prompt over (max_input_tokens + 2) x the longest token's bytes is refused by build_prompt.
  const int64_t max_input_tokens = ctx.service.limits().max_input_tokens;
  const ChatRenderBudget budget{max_input_tokens > 0 ? (max_input_tokens + 2) * ctx.tokenizer.max_token_bytes() : 0};
  // What the render may hold is request memory: reserved before it runs (429 / 422 like a prompt).
  const sched::ByteReservation render_hold =
      ctx.service.reserve_bytes(chat_render_reserve_bytes(budget), "rendering the chat template");
  if (!render_hold.ok()) return render_hold.rejection->error;
  PLIMSOLL_ASSIGN(std::string prompt, render(messages, budget));
  call.prompts = {std::move(prompt)};
  PLIMSOLL_ASSIGN(auto logprobs, f.boolean("logprobs"));
  PLIMSOLL_ASSIGN(auto top_logprobs, f.integer("top_logprobs"));
  const int64_t max_top = ctx.service.limits().max_top_n_tokens;
  if (top_logprobs && (*top_logprobs < 0 || *top_logprobs > max_top)) {
    return invalid("`top_logprobs` must be >= 0 and <= " + std::to_string(max_top) +
                   ". Given: " + std::to_string(*top_logprobs));
  }
  call.logprobs = logprobs.value_or(false);
  call.top_logprobs = call.logprobs ? static_cast<int32_t>(top_logprobs.value_or(0)) : 0;
  PLIMSOLL_ASSIGN(auto max_tokens, read_max_tokens(f, "max_tokens"));
  if (!max_tokens) {
    PLIMSOLL_ASSIGN(max_tokens, read_max_tokens(f, "max_completion_tokens"));
  }
  PLIMSOLL_TRY(expand(ctx, max_tokens, ctx.config.default_max_new_tokens, true, ctx.chat.add_special, &call));
  return call;
}

}  // namespace plimsoll::api
