// Validation of OpenAI fields (ranges as OpenAI documents them, messages in
// TGI's style) and the prompt x n expansion into GenerationRequests.
#include "api/openai_params.h"

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>

#include "api/field_reader.h"
#include "api/validation.h"
#include "api/request_json.h"
#include "api/generic_tools.h"
#include "api/grammar_params.h"
#include "api/tool_params.h"

namespace plimsoll::api {
namespace {

Error invalid(std::string message) { return make_error(ErrorCode::kInvalidArgument, std::move(message)); }

// Any JSON integer: OpenAI's seed is an int64 (negative ones included), TGI's a
// u64; both map onto the sampler's u64 seed bit for bit.
Result<std::optional<uint64_t>> read_seed(const FieldReader& f) {
  const json* v = f.raw("seed");
  if (!v) return std::optional<uint64_t>();
  if (v->is_number_unsigned()) return std::optional<uint64_t>(v->get<uint64_t>());
  if (v->is_number_integer()) return std::optional<uint64_t>(static_cast<uint64_t>(v->get<int64_t>()));
  return invalid(std::string("`seed` must be an integer, got ") + json_type_name(*v));
}

// {"<token id>": bias, ...}: ids of the vocabulary, biases in [-100, 100] (OpenAI's range).
Result<LogitBias> read_logit_bias(const FieldReader& f, int64_t vocab_size) {
  const json* v = f.raw("logit_bias");
  if (!v) return LogitBias();
  if (!v->is_object()) return invalid(std::string("`logit_bias` must be an object, got ") + json_type_name(*v));
  std::vector<LogitBias::Entry> entries;  // at most one per vocabulary id: keys are distinct
  entries.reserve(std::min<size_t>(v->size(), static_cast<size_t>(vocab_size)));
  for (const auto& [key, bias] : v->items()) {
    int64_t id = -1;
    const bool digits = !key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string::npos;
    if (digits) id = std::stoll(key);
    if (id < 0 || id >= vocab_size) {
      return invalid(fmt::format("`logit_bias` keys must be token ids of the vocabulary (0 to {}). Given: \"{}\"",
                                 vocab_size - 1, key.substr(0, 32)));
    }
    if (!bias.is_number() || !(bias.get<double>() >= -100.0 && bias.get<double>() <= 100.0)) {
      return invalid("`logit_bias` values must be numbers >= -100 and <= 100 (token " + key + ")");
    }
    entries.emplace_back(static_cast<int32_t>(id), static_cast<float>(bias.get<double>()));
  }
  return LogitBias(std::move(entries));
}

// vLLM's extensions: top_k (-1 or 0: off), min_p, repetition_penalty.
Status read_extensions(const FieldReader& f, SamplingParams* s) {
  PLIMSOLL_ASSIGN(auto top_k, f.integer("top_k"));
  PLIMSOLL_ASSIGN(auto min_p, f.number("min_p"));
  PLIMSOLL_ASSIGN(auto repetition_penalty, f.number("repetition_penalty"));
  if (top_k && (*top_k < -1 || *top_k > INT32_MAX)) {
    return invalid(fmt::format("`top_k` must be -1 or 0 (off) or a positive integer. Given: {}", *top_k));
  }
  if (min_p && !(*min_p >= 0.0 && *min_p <= 1.0)) return invalid("`min_p` must be >= 0.0 and <= 1.0");
  if (repetition_penalty && !(*repetition_penalty > 0.0 && *repetition_penalty <= 1e30)) {
    return invalid("`repetition_penalty` must be strictly positive");
  }
  if (repetition_penalty) s->repetition_penalty = static_cast<float>(*repetition_penalty);
  if (!s->do_sample) return {};  // greedy: the warpers do not apply (the penalty does)
  if (top_k) s->top_k = *top_k > 0 ? static_cast<int32_t>(*top_k) : 0;
  if (min_p) s->min_p = static_cast<float>(*min_p);
  return {};
}

Status read_sampling(const FieldReader& f, const GenerationDefaults& model_defaults, int64_t vocab_size,
                     SamplingParams* s) {
  apply_generation_defaults(model_defaults, s);
  PLIMSOLL_ASSIGN(auto temperature, f.number("temperature"));
  PLIMSOLL_ASSIGN(auto top_p, f.number("top_p"));
  PLIMSOLL_ASSIGN(auto presence, f.number("presence_penalty"));
  PLIMSOLL_ASSIGN(auto frequency, f.number("frequency_penalty"));
  PLIMSOLL_ASSIGN(auto seed, read_seed(f));
  PLIMSOLL_ASSIGN(auto stop, f.strings("stop", /*single_ok=*/true));
  PLIMSOLL_ASSIGN(auto ignore_eos, f.boolean("ignore_eos"));  // llama.cpp's and vLLM's extension
  PLIMSOLL_ASSIGN(s->logit_bias, read_logit_bias(f, vocab_size));
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
  if (top_p && s->do_sample) s->top_p = static_cast<float>(*top_p);
  PLIMSOLL_TRY(read_extensions(f, s));
  s->presence_penalty = static_cast<float>(presence.value_or(0.0));
  s->frequency_penalty = static_cast<float>(frequency.value_or(0.0));
  s->seed = seed;
  if (stop) s->stop = std::move(*stop);
  s->ignore_eos = ignore_eos.value_or(false);
  return {};
}

// Fields that ask for what this server does not do: refused, naming them.
Status read_refused(const FieldReader& f) {
  if (f.raw("suffix")) return invalid("`suffix` is not supported by this server (no fill-in-the-middle)");
  PLIMSOLL_ASSIGN(auto beam, f.boolean("use_beam_search"));
  if (beam.value_or(false)) return invalid("`use_beam_search` is not supported by this server");
  PLIMSOLL_ASSIGN(auto min_tokens, f.integer("min_tokens"));
  if (min_tokens.value_or(0) > 0) return invalid("`min_tokens` > 0 is not supported by this server");
  if (f.raw("audio")) return invalid("`audio` output is not supported by this server (text only)");
  if (const json* modalities = f.raw("modalities")) {
    if (!modalities->is_array() || modalities->size() != 1 || (*modalities)[0] != "text") {
      return invalid("`modalities` other than [\"text\"] are not supported by this server");
    }
  }
  if (f.raw("web_search_options")) return invalid("`web_search_options` is not supported by this server");
  return {};
}

Status read_common(RouteContext& ctx, const FieldReader& f, const BodyPath& at, OpenAiCall* call) {
  PLIMSOLL_TRY(read_refused(f));
  PLIMSOLL_TRY(read_sampling(f, ctx.config.generation_defaults, ctx.tokenizer.vocab_size(), &call->sampling));
  PLIMSOLL_ASSIGN(const GrammarHandle format, read_response_format(f, GrammarLimits{}, at, ctx.grammars));
  call->sampling.grammar = format.grammar;
  call->sampling.grammar_cached = format.cached;
  PLIMSOLL_ASSIGN(auto n, f.integer("n"));
  PLIMSOLL_ASSIGN(auto best_of, f.integer("best_of"));
  PLIMSOLL_ASSIGN(auto stream, f.boolean("stream"));
  PLIMSOLL_ASSIGN(auto include_stop, f.boolean("include_stop_str_in_output"));
  const int64_t max_n = ctx.config.max_n;
  if (n && (*n < 1 || *n > max_n)) {
    return invalid(fmt::format("`n` must be >= 1 and <= {}. Given: {}", max_n, *n));
  }
  call->n = n.value_or(1);
  call->stream = stream.value_or(false);
  PLIMSOLL_ASSIGN(call->priority, read_priority(f));
  if (best_of && (*best_of < call->n || *best_of > max_n)) {
    return invalid(fmt::format("`best_of` must be >= `n` ({}) and <= {}. Given: {}", call->n, max_n, *best_of));
  }
  call->best_of = best_of.value_or(call->n);
  if (call->best_of > call->n && call->stream) return invalid("`best_of` > `n` cannot be used with `stream`");
  call->include_stop = include_stop.value_or(false);
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

// The item requests of one prompt (text or ids): best_of copies, seeds
// seed, seed + 1, ... so the copies differ.
Status add_items(RouteContext& ctx, const PromptPlan& plan, int64_t default_max_tokens, size_t prompt, OpenAiCall* call) {
  sched::GenerationRequest item;
  item.params = call->sampling;  // the stop and bias lists are shared, not copied
  item.top_n_tokens = call->top_logprobs;
  item.token_records = call->logprobs;
  item.raw_logprobs = true;
  item.logprobs_needed = call->logprobs || call->best_of > call->n;  // records, or the best_of choice
  item.prompt_details = call->echo && call->logprobs;  // the prompt's logprobs are echoed too
  item.prompt_top_n = item.prompt_details ? call->top_logprobs : 0;
  item.streamed = call->stream;
  item.priority = call->priority;
  const sched::ServiceLimits limits = ctx.service.limits();
  PLIMSOLL_TRY(build_prompt(plan, ctx.tokenizer, limits,
                            default_max_new_tokens(ctx.config.generation_defaults, default_max_tokens), &item));
  call->prompt_tokens += static_cast<int64_t>(item.prompt_ids.size());
  if (call->echo && plan.ids) call->prompts[prompt] = ctx.tokenizer.decode(item.prompt_ids);
  for (int64_t j = 0; j < call->best_of; ++j) {
    sched::GenerationRequest copy = item;
    if (copy.params.seed && j > 0) *copy.params.seed += static_cast<uint64_t>(j);  // distinct choices
    copy.held_text_bytes = call->echo ? static_cast<int64_t>(call->prompts[prompt].size()) : 0;  // echoed in each
    call->items.push_back(std::move(copy));
  }
  return {};
}

// prompts x best_of GenerationRequests, each prompt checked against the limits.
// A token prompt's echo text is decoded once its length is checked.
Status expand(RouteContext& ctx, std::optional<int64_t> max_tokens, int64_t default_max_tokens,
              bool parse_special, std::optional<bool> add_special, OpenAiCall* call) {
  const sched::ServiceLimits limits = ctx.service.limits();
  const size_t n_prompts = call->prompt_ids.empty() ? call->prompts.size() : call->prompt_ids.size();
  call->prompts.resize(n_prompts);
  PLIMSOLL_TRY(check_client_batch(n_prompts * static_cast<size_t>(call->best_of), limits));
  int64_t units = 0;  // text bytes, or ids: what tokens can come to
  for (const std::string& prompt : call->prompts) units += tokenized_bytes(prompt, ctx.tokenizer, limits);
  for (const auto& ids : call->prompt_ids) units += static_cast<int64_t>(ids.size());
  // Held until the items are submitted (admission charges them from there):
  // the parsed token prompts, a token prompt's decoded text for echo, the logit_bias list.
  int64_t held = call->sampling.logit_bias.bytes();
  for (const auto& ids : call->prompt_ids) {
    held += 4 * static_cast<int64_t>(ids.size()) +
            (call->echo ? static_cast<int64_t>(ids.size()) * ctx.tokenizer.max_token_bytes() : 0);
  }
  const int64_t n_items = static_cast<int64_t>(n_prompts) * call->best_of;
  call->build_hold = ctx.service.reserve_bytes(sched::prompt_build_bytes(n_items, call->best_of * units) + held,
                                               "tokenizing this request", sched::BackstopCheck::kAtSubmit);
  if (!call->build_hold.ok()) return call->build_hold.rejection->error;
  call->items.reserve(static_cast<size_t>(n_items));
  const GenerationDefaults& d = ctx.config.generation_defaults;
  for (size_t p = 0; p < n_prompts; ++p) {
    PromptPlan plan{call->prompts[p], max_tokens, std::nullopt, parse_special, add_special,
                    d.max_new_tokens ? std::nullopt : d.max_length};
    plan.field = call->chat ? "messages" : "prompt";
    plan.max_field = call->max_field;
    if (!call->prompt_ids.empty()) plan.ids = &call->prompt_ids[p];
    PLIMSOLL_TRY(add_items(ctx, plan, default_max_tokens, p, call));
  }
  call->item_count = call->items.size();
  call->prompt_ids = {};
  if (!call->echo) call->prompts.assign(call->prompts.size(), std::string());
  return {};
}

// `prompt`: a string, a list of strings, a list of token ids, or a list of
// lists of token ids (vLLM and OpenAI accept all four).
Status read_prompts(const FieldReader& f, OpenAiCall* call) {
  const char* shape = "`prompt` must be a string, a non-empty list of strings, a list of token ids or a list of lists of token ids";
  const json* prompt = f.raw("prompt");
  if (!prompt) return invalid("`prompt` is required");
  auto token_list = [&](const json& list, std::vector<int32_t>* out) -> Status {
    out->reserve(list.size());
    for (const json& id : list) {
      if (!id.is_number_integer()) return invalid(shape);
      const bool fits = id.is_number_unsigned() ? id.get<uint64_t>() <= INT32_MAX
                                                : id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX;
      if (!fits) return invalid("`prompt` holds token id " + id.dump() + ", outside the vocabulary");
      out->push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    return {};
  };
  if (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_number_integer()) {
    call->prompt_ids.emplace_back();
    return token_list(*prompt, &call->prompt_ids.back());
  }
  if (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_array()) {
    for (const json& list : *prompt) {
      if (!list.is_array()) return invalid(shape);
      call->prompt_ids.emplace_back();
      PLIMSOLL_TRY(token_list(list, &call->prompt_ids.back()));
    }
    return {};
  }
  PLIMSOLL_ASSIGN(auto prompts, f.strings("prompt", /*single_ok=*/true));
  if (!prompts || prompts->empty()) return invalid(shape);
  call->prompts = std::move(*prompts);
  return {};
}

// `content` may be null (absent): the message's text, and, when it was sent as a
// list of text parts, those parts ({"type": "text", "text"} each) for templates that
// iterate them. Read in place: a request tree is never copied.
Status read_content(const json* content_or_null, ChatMessage* message) {
  if (!content_or_null) return {};
  const json& content = *content_or_null;
  if (content.is_string()) {
    message->content = content.get<std::string>();
    return {};
  }
  if (!content.is_array()) return invalid("`messages[].content` must be a string or a list of parts");
  message->content_parts = OrderedJson::array();
  for (const json& part : content) {
    FieldReader f(part);
    PLIMSOLL_ASSIGN(auto type, f.string("type"));
    PLIMSOLL_ASSIGN(auto part_text, f.string("text"));
    if (type.value_or("") != "text" || !part_text) {
      return invalid("`messages[].content` parts must be {\"type\": \"text\", \"text\": ...}");
    }
    message->content += *part_text;
    message->content_parts.push_back({{"type", "text"}, {"text", std::move(*part_text)}});
  }
  return {};
}

// An assistant turn's tool_calls for the template: each call as sent, its
// `arguments` JSON text kept as sent (chat_prompt parses it for templates that
// only print objects: template_arguments).
Result<OrderedJson> read_tool_calls(const json& calls) {
  if (!calls.is_array()) return invalid("`messages[].tool_calls` must be a list");
  OrderedJson out = OrderedJson::array();
  for (const json& call : calls) {
    const auto fn = call.find("function");
    if (!call.is_object() || fn == call.end() || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string()) {
      return invalid("`messages[].tool_calls[]` must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
    }
    OrderedJson c = OrderedJson::object();
    if (call.contains("id")) c["id"] = call["id"];
    c["type"] = call.value("type", json("function"));
    OrderedJson f = {{"name", (*fn)["name"]}};
    const json arguments = fn->value("arguments", json("{}"));
    f["arguments"] = arguments.is_string() ? OrderedJson(arguments.get_ref<const std::string&>())
                                           : OrderedJson::parse(arguments.dump());  // an object sent as one (HF's own form)
    c["function"] = std::move(f);
    out.push_back(std::move(c));
  }
  return out;
}

// The bytes of the tool-call arguments (JSON text) in `messages`, or of those
// sent as objects: what read_tool_calls parses into trees.
int64_t tool_argument_bytes(const FieldReader& f) {
  const json* messages = f.raw("messages");
  if (!messages || !messages->is_array()) return 0;
  int64_t bytes = 0;
  for (const json& m : *messages) {
    const auto calls = m.is_object() ? m.find("tool_calls") : m.end();
    if (!m.is_object() || calls == m.end() || !calls->is_array()) continue;
    for (const json& call : *calls) {
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
      const json& arguments = call["function"].value("arguments", json());
      bytes += arguments.is_string() ? static_cast<int64_t>(arguments.get_ref<const std::string&>().size())
                                     : static_cast<int64_t>(arguments.dump().size());
    }
  }
  return bytes;
}

// Messages with the tool fields templates read: an assistant's tool_calls,
// a tool result's tool_call_id and name.
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
    ChatMessage message{*role, std::string()};
    PLIMSOLL_TRY(read_content(mf.raw("content"), &message));
    message.content_null = mf.raw("content") == nullptr;
    if (const json* calls = mf.raw("tool_calls")) {
      PLIMSOLL_ASSIGN(OrderedJson list, read_tool_calls(*calls));
      message.tool_fields = {{"tool_calls", std::move(list)}};
    }
    for (const char* key : {"tool_call_id", "name"}) {
      PLIMSOLL_ASSIGN(auto value, mf.string(key));
      if (!value) continue;
      if (!message.tool_fields.is_object()) message.tool_fields = OrderedJson::object();
      message.tool_fields[key] = *value;
    }
    out.push_back(std::move(message));
  }
  return out;
}

}  // namespace

Result<OpenAiCall> parse_completion_call(RouteContext& ctx, const json& body, std::string_view body_text) {
  if (!body.is_object()) return invalid("the request body must be a JSON object");
  FieldReader f(body);
  OpenAiCall call;
  PLIMSOLL_TRY(read_common(ctx, f, BodyPath{body_text, {}}, &call));
  PLIMSOLL_TRY(read_prompts(f, &call));
  PLIMSOLL_ASSIGN(auto echo, f.boolean("echo"));
  PLIMSOLL_ASSIGN(auto logprobs, f.integer("logprobs"));
  const int64_t max_top = ctx.service.limits().max_top_n_tokens;
  if (logprobs && (*logprobs < 0 || *logprobs > max_top)) {
    return invalid(fmt::format("`logprobs` must be >= 0 and <= {}. Given: {}", max_top, *logprobs));
  }
  call.echo = echo.value_or(false);
  call.logprobs = logprobs.has_value();
  call.top_logprobs = static_cast<int32_t>(logprobs.value_or(0));
  PLIMSOLL_ASSIGN(auto max_tokens, read_max_tokens(f, "max_tokens"));
  PLIMSOLL_TRY(expand(ctx, max_tokens, ctx.config.default_completion_max_tokens, false, std::nullopt, &call));
  return call;
}

Result<OpenAiCall> parse_chat_call(RouteContext& ctx, const json& body, std::string_view body_text) {
  if (!body.is_object()) return invalid("the request body must be a JSON object");
  FieldReader f(body);
  OpenAiCall call;
  call.chat = true;
  PLIMSOLL_TRY(read_common(ctx, f, BodyPath{body_text, {}}, &call));
  // The tools in the client's key order and the parsed tool-call arguments are
  // trees beside the request's own: reserved before they are built (the hold
  // is declared first, so the trees are gone before it is given back).
  const int64_t argument_bytes = tool_argument_bytes(f);
  const sched::ByteReservation tools_hold = ctx.service.reserve_bytes(
      tools_tree_bytes(f, ToolLimits{}) + (argument_bytes > 0 ? json_tree_limit_bytes(argument_bytes) : 0),
      "reading tools", sched::BackstopCheck::kAtSubmit);
  if (!tools_hold.ok()) return tools_hold.rejection->error;
  PLIMSOLL_ASSIGN(ToolRequest tools, read_tools(f, body_text, ctx.chat.tool_format, ToolLimits{}, GrammarLimits{},
                                                call.sampling.grammar != nullptr, ctx.grammars));
  if (tools.grammar.grammar) {  // charged like response_format's (by admission, unless the cache holds it)
    call.sampling.grammar = tools.grammar.grammar;
    call.sampling.grammar_cached = tools.grammar.cached;
  }
  if (tools.parses_calls()) call.tool_calls = tools.format;
  call.parallel_tool_calls = tools.parallel;
  PLIMSOLL_ASSIGN(auto messages, read_messages(f));
  OrderedJson tool_list = tools.parses_calls() ? std::move(tools.tools) : OrderedJson();
  if (tools.format == ToolFormat::kGeneric) {  // described in a system message, not passed to the template
    const GenericToolShape shape{tools.choice == ToolChoice::kAuto, tools.parallel && tools.choice != ToolChoice::kNamed};
    add_generic_tools(tool_list, shape, &messages);
    tool_list = OrderedJson();
  }
  const ChatTemplateFn& render = ctx.chat.render ? ctx.chat.render : default_chat_template;
  // A rendered prompt over (max_input_tokens + 2) x the longest token's bytes is refused by build_prompt.
  const int64_t max_input_tokens = ctx.service.limits().max_input_tokens;
  const ChatRenderBudget budget{max_input_tokens > 0 ? (max_input_tokens + 2) * ctx.tokenizer.max_token_bytes() : 0};
  // What the render may hold is request memory: reserved before it runs (429 / 422 like a prompt).
  const sched::ByteReservation render_hold =
      ctx.service.reserve_bytes(chat_render_reserve_bytes(budget), "rendering the chat template",
                                sched::BackstopCheck::kAtSubmit);
  if (!render_hold.ok()) return render_hold.rejection->error;
  Result<std::string> rendered = render(messages, budget, tool_list);
  // Templates that refuse a system role (Gemma 2, ...) get the generic tools' description in the first user turn.
  if (!rendered && tools.format == ToolFormat::kGeneric && fold_system_into_user(&messages)) {
    rendered = render(messages, budget, tool_list);
  }
  PLIMSOLL_ASSIGN(std::string prompt, std::move(rendered));
  call.prompts = {std::move(prompt)};
  PLIMSOLL_ASSIGN(auto logprobs, f.boolean("logprobs"));
  PLIMSOLL_ASSIGN(auto top_logprobs, f.integer("top_logprobs"));
  const int64_t max_top = ctx.service.limits().max_top_n_tokens;
  if (top_logprobs && (*top_logprobs < 0 || *top_logprobs > max_top)) {
    return invalid(fmt::format("`top_logprobs` must be >= 0 and <= {}. Given: {}", max_top, *top_logprobs));
  }
  call.logprobs = logprobs.value_or(false);
  call.top_logprobs = call.logprobs ? static_cast<int32_t>(top_logprobs.value_or(0)) : 0;
  PLIMSOLL_ASSIGN(auto max_tokens, read_max_tokens(f, "max_tokens"));
  if (!max_tokens) {
    PLIMSOLL_ASSIGN(max_tokens, read_max_tokens(f, "max_completion_tokens"));
    if (max_tokens) call.max_field = "max_completion_tokens";
  }
  // Without max_tokens a chat runs to the context limit (OpenAI, vLLM, TGI),
  // unless generation_config.json gives a length.
  const int64_t to_context = ctx.service.limits().max_total_tokens > 0 ? INT64_MAX : ctx.config.default_max_new_tokens;
  PLIMSOLL_TRY(expand(ctx, max_tokens, to_context, true, ctx.chat.add_special, &call));
  return call;
}

}  // namespace plimsoll::api
