// OpenAI-compatible routes: POST /v1/completions and /v1/chat/completions,
// as JSON or as SSE chunks ending with `data: [DONE]`; errors in OpenAI's
// shape (errors.h). Stop sequences are left out of the text (held back while
// streaming); best_of picks the n items of highest mean logprob per prompt.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>
#include <utility>

#include "api/errors.h"
#include "api/generation.h"
#include "api/json_text.h"
#include "api/openai_params.h"
#include "api/request_json.h"
#include "api/route_context.h"
#include "api/stop_holdback.h"
#include "api/tool_call_scan.h"
#include "api/tool_calls.h"

namespace plimsoll::api {
namespace {

using TokenRows = std::vector<std::vector<sched::TokenInfo>>;

const char* openai_finish_reason(FinishReason reason) {
  return reason == FinishReason::kLength ? "length" : "stop";
}

std::string response_id(bool chat) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(rng()));
  return std::string(chat ? "chatcmpl-" : "cmpl-") + hex;
}

int64_t unix_seconds() {
  using namespace std::chrono;
  return duration_cast<seconds>(system_clock::now().time_since_epoch()).count();
}

json bytes_json(const std::string& text) {
  json out = json::array();
  for (unsigned char c : text) out.push_back(c);
  return out;
}

// Chat: {"content":[{"token","logprob","bytes","top_logprobs":[...]}]}
json chat_logprobs(const std::vector<sched::TokenInfo>& tokens, const TokenRows& top) {
  json content = json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    json alternatives = json::array();
    for (const auto& t : top[i]) {
      alternatives.push_back({{"token", t.text}, {"logprob", logprob_json(t.logprob)}, {"bytes", bytes_json(t.text)}});
    }
    content.push_back({{"token", tokens[i].text}, {"logprob", logprob_json(tokens[i].logprob)},
                       {"bytes", bytes_json(tokens[i].text)}, {"top_logprobs", alternatives}});
  }
  return {{"content", content}};
}

// Completions' four parallel lists; a token without a logprob (the echoed
// prompt's first) has null for its logprob and its top_logprobs.
class CompletionLogprobs {
 public:
  explicit CompletionLogprobs(size_t offset) : offset_(offset) {}

  // The top_logprobs dict holds the alternatives and the token itself (OpenAI:
  // "up to logprobs + 1 elements"; vLLM does the same).
  void add(const sched::TokenInfo& token, const std::vector<sched::TokenInfo>& alternatives) {
    out_["tokens"].push_back(token.text);
    out_["token_logprobs"].push_back(logprob_json(token.logprob));
    if (std::isfinite(token.logprob) || !alternatives.empty()) {
      json top = json::object();
      for (const auto& t : alternatives) top[t.text] = logprob_json(t.logprob);
      if (!top.contains(token.text)) top[token.text] = logprob_json(token.logprob);
      out_["top_logprobs"].push_back(std::move(top));
    } else {
      out_["top_logprobs"].push_back(nullptr);
    }
    out_["text_offset"].push_back(offset_);
    offset_ += token.text.size();
  }
  void add_all(const std::vector<sched::TokenInfo>& tokens, const TokenRows& top) {
    static const std::vector<sched::TokenInfo> kNone;
    for (size_t i = 0; i < tokens.size(); ++i) add(tokens[i], i < top.size() ? top[i] : kNone);
  }
  size_t offset() const { return offset_; }
  json take() { return std::move(out_); }

 private:
  size_t offset_;
  json out_ = {{"tokens", json::array()}, {"token_logprobs", json::array()},
               {"top_logprobs", json::array()}, {"text_offset", json::array()}};
};

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

json envelope(const OpenAiCall& call, const std::string& id, int64_t created, const std::string& model,
              bool chunk) {
  const char* object = call.chat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                 : "text_completion";
  return {{"id", id}, {"object", object}, {"created", created}, {"model", model},
          {"system_fingerprint", "plimsoll"}};
}

// The answer text of one item: a matched stop sequence left out (unless include_stop).
std::string answer_text(const OpenAiCall& call, const sched::TokenEvent& final) {
  return call.include_stop ? final.generated_text : without_stop(final.generated_text, final.stop_offset);
}

// OpenAI's tool_calls list (`index` set for stream deltas).
json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index) {
  json out = json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    json c = {{"id", calls[k].id}, {"type", "function"},
              {"function", {{"name", calls[k].name}, {"arguments", calls[k].arguments}}}};
    if (with_index) c["index"] = k;
    out.push_back(std::move(c));
  }
  return out;
}

// A chat answer's message: with tools, the calls the model wrote (content
// null when it wrote nothing before them) and finish_reason "tool_calls".
json chat_message(const OpenAiCall& call, const ItemOutcome& item, const char** finish_reason) {
  std::string text = answer_text(call, item.final);
  if (call.tool_calls != ToolFormat::kNone) {
    ParsedAnswer parsed = parse_tool_calls(call.tool_calls, text);
    if (!parsed.calls.empty()) {
      if (!call.parallel_tool_calls) parsed.calls.resize(1);  // parallel_tool_calls false: the first call
      use_written_arguments(call.tool_calls, text, &parsed.calls);
      *finish_reason = "tool_calls";
      return {{"role", "assistant"}, {"content", parsed.content.empty() ? json() : json(parsed.content)},
              {"tool_calls", tool_calls_json(parsed.calls, false)}};
    }
    text = std::move(parsed.content);  // the text whole, or the generic format's reply
  }
  return {{"role", "assistant"}, {"content", std::move(text)}};
}

json choice_json(const OpenAiCall& call, size_t index, size_t prompt, const ItemOutcome& item) {
  const std::string& prefix = call.echo ? call.prompts[prompt] : std::string();
  json choice = {{"index", index}};
  const char* finish_reason = openai_finish_reason(item.final.finish_reason);
  if (call.chat) {
    choice["message"] = chat_message(call, item, &finish_reason);
  } else {
    choice["text"] = prefix + answer_text(call, item.final);
  }
  if (!call.logprobs) {
    choice["logprobs"] = nullptr;
  } else if (call.chat) {
    choice["logprobs"] = chat_logprobs(item.tokens, item.top_tokens);
  } else {
    CompletionLogprobs logprobs(call.echo && item.prefill.empty() ? prefix.size() : 0);
    if (call.echo) logprobs.add_all(item.prefill, item.prefill_top);
    logprobs.add_all(item.tokens, item.top_tokens);
    choice["logprobs"] = logprobs.take();
  }
  choice["finish_reason"] = finish_reason;
  return choice;
}

// Of each prompt's best_of items, the n to answer with, best first.
std::vector<size_t> chosen_items(const OpenAiCall& call, const std::vector<ItemOutcome>& items) {
  std::vector<size_t> out;
  const size_t per_prompt = static_cast<size_t>(call.best_of);
  for (size_t first = 0; first < items.size(); first += per_prompt) {
    std::vector<size_t> group(per_prompt);
    std::iota(group.begin(), group.end(), first);
    if (call.best_of > call.n) {
      std::stable_sort(group.begin(), group.end(),
                       [&](size_t a, size_t b) { return mean_logprob(items[a]) > mean_logprob(items[b]); });
    }
    out.insert(out.end(), group.begin(), group.begin() + call.n);
  }
  return out;
}

class OpenAiStreamFormatter final : public StreamFormatter {
 public:
  OpenAiStreamFormatter(OpenAiCall call, std::string model)
      : call_(std::move(call)), id_(response_id(call_.chat)), created_(unix_seconds()), model_(std::move(model)) {
    for (size_t i = 0; i < call_.item_count; ++i) {
      choices_.push_back(Choice{StopHoldback(call_.sampling.stop, !call_.include_stop)});
    }
  }

  std::string on_event(const sched::TokenEvent& event, bool* end) override {
    if (event.error) {
      *end = true;
      // OpenAI clients read a mid-stream error from {"error": {...}}; vLLM ends with [DONE] too.
      return sse_frame(error_body(api_error(*event.error), ErrorWire::kOpenAi), true) + sse_frame("[DONE]", true);
    }
    if (event.index >= choices_.size()) return "";
    Choice& c = choices_[event.index];
    if (event.final) completion_tokens_ += event.generated_tokens;
    std::string text = event.final ? c.text.finish(event.text, call_.include_stop ? -1 : event.stop_offset)
                                   : c.text.push(event.text);
    const bool first = !c.started;
    const size_t prompt = event.index / static_cast<size_t>(call_.n);
    if (first && call_.echo) text = call_.prompts[prompt] + text;
    if (call_.tool_calls != ToolFormat::kNone) text = release_content(c, text);
    json logprobs = logprobs_json(event, c);
    if (call_.tool_calls != ToolFormat::kNone) {
      if (auto frames = tool_frames(event, c, &text, &logprobs)) return std::move(*frames);
    }
    // All held back. With tools not even the role goes alone: it comes with the first content or call
    // (a stream that turns out to be calls starts with them, content null, as OpenAI's does).
    const bool tools = call_.tool_calls != ToolFormat::kNone;
    if (text.empty() && (!first || tools) && !event.final && logprobs.is_null()) return "";
    c.started = true;
    json choice = {{"index", event.index}};
    if (call_.chat) {
      choice["delta"] = {{"content", text}};
      if (first) choice["delta"]["role"] = "assistant";
    } else {
      choice["text"] = text;
    }
    c.offset += text.size();
    choice["logprobs"] = std::move(logprobs);
    choice["finish_reason"] = event.final ? json(openai_finish_reason(event.finish_reason)) : json(nullptr);
    json chunk = envelope(call_, id_, created_, model_, true);
    chunk["choices"] = json::array({choice});
    if (call_.include_usage) chunk["usage"] = nullptr;  // OpenAI: every chunk but the last has usage: null
    return sse_frame(dump_json(chunk), true);
  }

  std::string on_finish() override {
    std::string out;
    if (call_.include_usage) {
      json chunk = envelope(call_, id_, created_, model_, true);
      chunk["choices"] = json::array();
      chunk["usage"] = usage_json(call_.prompt_tokens, completion_tokens_);
      out += sse_frame(dump_json(chunk), true);
    }
    return out + sse_frame("[DONE]", true);
  }

 private:
  struct Choice {
    StopHoldback text;
    bool started = false;
    size_t offset = 0;  // text bytes sent (echo included): where the next token's text_offset starts
    std::string full;   // with tools: the answer so far (calls are parsed from it at the end)
    size_t sent = 0;    // with tools: bytes of `full` sent as content
    struct SentCall {
      std::string id;
      size_t args_sent = 0;  // bytes of its arguments' text sent
    };
    std::vector<SentCall> calls;  // with tools: the calls streamed so far (name sent)
    size_t reply_sent = 0;        // generic format: bytes of the decoded reply sent as content
  };

  // Generic format: the reply's text decoded since the last event.
  static std::string next_reply_text(Choice& c) {
    const auto reply = generic_reply_so_far(c.full);
    if (!reply || reply->size() <= c.reply_sent) return "";
    std::string out = reply->substr(c.reply_sent);
    c.reply_sent = reply->size();
    return out;
  }

  // With tools: the frames for this event when calls are being (or were)
  // streamed; otherwise nullopt with `text` set to the content to send now
  // (released text, the generic format's reply so far, at the end whatever
  // was held that is not a call).
  std::optional<std::string> tool_frames(const sched::TokenEvent& event, Choice& c, std::string* text,
                                         json* logprobs) const {
    std::vector<json> deltas;
    if (!text->empty()) deltas.push_back({{"content", *text}});  // content released before any call
    stream_calls(c, &deltas);
    if (!event.final) {
      if (!c.calls.empty()) {
        if (deltas.empty()) return std::nullopt;  // nothing new (logprobs, if any, go in an empty delta)
        return delta_frames(event.index, c, std::move(deltas), std::exchange(*logprobs, nullptr), nullptr);
      }
      if (call_.tool_calls == ToolFormat::kGeneric) *text = next_reply_text(c);
      return std::nullopt;
    }
    ParsedAnswer parsed = parse_tool_calls(call_.tool_calls, c.full);
    if (!call_.parallel_tool_calls && parsed.calls.size() > 1) parsed.calls.resize(1);
    use_written_arguments(call_.tool_calls, std::string_view(c.full).substr(c.sent), &parsed.calls);
    if (!parsed.calls.empty() || !c.calls.empty()) {
      finish_calls(c, parsed.calls, &deltas);
      const char* reason = parsed.calls.empty() ? openai_finish_reason(event.finish_reason) : "tool_calls";
      return delta_frames(event.index, c, std::move(deltas), std::exchange(*logprobs, nullptr), reason);
    }
    // Not a call after all: the held text is content (the generic format's: the rest of its reply).
    if (call_.tool_calls != ToolFormat::kGeneric) {
      *text += c.full.substr(c.sent);
    } else if (const auto reply = generic_reply_so_far(c.full)) {
      *text += reply->substr(std::min(c.reply_sent, reply->size()));
    } else {
      *text += parsed.content;
    }
    return std::nullopt;
  }

  // With tools: deltas for the calls in the held text as far as it goes: a
  // call's id and name once its name is known and its arguments have begun,
  // then its arguments' text as it grows.
  void stream_calls(Choice& c, std::vector<json>* deltas) const {
    const std::string_view held = std::string_view(c.full).substr(c.sent);
    const std::vector<CallProgress> progress = scan_tool_calls(call_.tool_calls, held);
    const size_t most = call_.parallel_tool_calls ? progress.size() : std::min<size_t>(progress.size(), 1);
    for (size_t k = 0; k < most; ++k) {
      const CallProgress& p = progress[k];
      if (!p.has_name || p.args_begin == std::string_view::npos) break;  // in order: later ones wait
      if (k == c.calls.size()) {
        c.calls.push_back({new_tool_call_id(call_.tool_calls), 0});
        deltas->push_back({{"tool_calls", json::array({{{"index", k}, {"id", c.calls[k].id}, {"type", "function"},
                                                        {"function", {{"name", p.name}, {"arguments", ""}}}}})}});
      }
      const size_t sent = p.args_begin + c.calls[k].args_sent;
      if (p.args_end > sent) {
        deltas->push_back({{"tool_calls", json::array({{{"index", k},
                                                        {"function", {{"arguments", std::string(held.substr(sent, p.args_end - sent))}}}}})}});
        c.calls[k].args_sent = p.args_end - p.args_begin;
      }
    }
  }

  // At the end: the parsed calls the scan did not stream, whole (ids as sent).
  void finish_calls(Choice& c, const std::vector<ToolCall>& parsed, std::vector<json>* deltas) const {
    for (size_t k = c.calls.size(); k < parsed.size(); ++k) {
      c.calls.push_back({parsed[k].id, parsed[k].arguments.size()});
      deltas->push_back({{"tool_calls", json::array({{{"index", k}, {"id", parsed[k].id}, {"type", "function"},
                                                      {"function", {{"name", parsed[k].name}, {"arguments", ""}}}}})}});
      deltas->push_back({{"tool_calls", json::array({{{"index", k}, {"function", {{"arguments", parsed[k].arguments}}}}})}});
    }
  }

  // One chunk per delta (the first carries the role and the token's logprobs),
  // then, when `finish_reason` is set, a last chunk with it.
  std::string delta_frames(size_t index, Choice& c, std::vector<json> deltas, json logprobs,
                           const char* finish_reason) const {
    std::string out;
    for (json& delta : deltas) {
      if (!c.started) {
        delta["role"] = "assistant";
        if (!delta.contains("content")) delta["content"] = nullptr;
      }
      c.started = true;
      out += chat_frame(index, std::move(delta), std::exchange(logprobs, nullptr), nullptr);
    }
    if (finish_reason) out += chat_frame(index, json::object(), std::move(logprobs), finish_reason);
    return out;
  }

  // With tools: of the answer so far, the content that can go now; from where
  // a call begins or may begin, text waits for the final parse.
  std::string release_content(Choice& c, const std::string& text) const {
    c.full += text;
    const size_t hold = std::max(c.sent, tool_call_hold_from(call_.tool_calls, c.full));
    std::string out = c.full.substr(c.sent, hold - c.sent);
    c.sent = hold;
    return out;
  }

  std::string chat_frame(size_t index, json delta, json logprobs, json finish_reason) const {
    json chunk = envelope(call_, id_, created_, model_, true);
    chunk["choices"] = json::array({{{"index", index}, {"delta", std::move(delta)}, {"logprobs", std::move(logprobs)},
                                     {"finish_reason", std::move(finish_reason)}}});
    if (call_.include_usage) chunk["usage"] = nullptr;
    return sse_frame(dump_json(chunk), true);
  }

  json logprobs_json(const sched::TokenEvent& event, const Choice& c) const {
    if (!call_.logprobs) return nullptr;
    std::vector<sched::TokenInfo> tokens;
    TokenRows top;
    if (event.token.id >= 0) {
      tokens.push_back(event.token);
      top.push_back(event.top_tokens);
    }
    if (call_.chat) return chat_logprobs(tokens, top);
    CompletionLogprobs logprobs(c.offset);
    if (call_.echo) logprobs.add_all(event.prefill, event.prefill_top);  // the first event carries them
    logprobs.add_all(tokens, top);
    return logprobs.take();
  }

  OpenAiCall call_;
  std::string id_;
  int64_t created_;
  std::string model_;
  std::vector<Choice> choices_;
  int64_t completion_tokens_ = 0;
};

// The preparation stage (route_context.h's prepare): body -> validated call
// (completion or chat) -> submitted. Fills `call` and `submission`, or
// returns what to answer.
std::optional<ApiError> prepare_openai(RouteContext& ctx, HttpRequest& req, bool chat, RequestRecorder& recorder,
                                       std::optional<OpenAiCall>* call, Submission* submission) {
  std::optional<ApiError> failure;
  const Status status = prepare(ctx, req, [&]() -> Status {
    PLIMSOLL_ASSIGN(json body, parse_request_json(req.body, req.body_reservation));
    Result<OpenAiCall> c = chat ? parse_chat_call(ctx, body, req.body) : parse_completion_call(ctx, body, req.body);
    release_json(body);
    req.release_body();
    if (!c) {
      failure = api_error(c.error());
      recorder.fail(*failure);
      return {};
    }
    c->build_hold = {};  // the submission's charge covers the items from here
    if (auto e = submit(ctx, req, std::move(c->items), recorder, submission)) {
      failure = *e;
      recorder.fail(*failure);
      return {};
    }
    *call = std::move(*c);
    return {};
  });
  if (!status.ok()) return api_error(status.error());
  return failure;
}

void respond(RouteContext& ctx, bool chat, HttpRequest& req, HttpResponse& res) {
  auto recorder = std::make_shared<RequestRecorder>(ctx.metrics);
  std::optional<OpenAiCall> call;
  Submission submission;
  if (auto e = prepare_openai(ctx, req, chat, *recorder, &call, &submission)) {
    return send_error(res, *e, ErrorWire::kOpenAi);
  }
  auto fail = [&](const ApiError& e) { recorder->fail(e); send_error(res, e, ErrorWire::kOpenAi); };
  submission.client_gone = req.client_gone;
  if (call->stream) {
    return start_stream(ctx, res, std::move(submission),
                        std::make_unique<OpenAiStreamFormatter>(std::move(*call), ctx.model_id()),
                        recorder);
  }
  std::vector<ItemOutcome> items;
  if (auto e = collect(ctx, submission, *recorder, &items, call->logprobs)) return fail(*e);
  json out = envelope(*call, response_id(call->chat), unix_seconds(), ctx.model_id(), false);
  out["choices"] = json::array();
  int64_t completion_tokens = 0;
  for (const ItemOutcome& item : items) completion_tokens += item.final.generated_tokens;  // best_of: all count
  const std::vector<size_t> chosen = chosen_items(*call, items);
  for (size_t i = 0; i < chosen.size(); ++i) {
    out["choices"].push_back(choice_json(*call, i, i / static_cast<size_t>(call->n), items[chosen[i]]));
  }
  out["usage"] = usage_json(call->prompt_tokens, completion_tokens);
  recorder->succeed();
  send_json(res, dump_json(out));
}

}  // namespace

// The JSON tree is dropped and the body released once the call is validated.
void add_openai_routes(RouteTable& routes, RouteContext& ctx) {
  routes.post("/v1/completions", Access::kKey, route_edge(ctx, [&ctx](HttpRequest& req, HttpResponse& res) {
    respond(ctx, false, req, res);
  }));
  routes.post("/v1/chat/completions", Access::kKey, route_edge(ctx, [&ctx](HttpRequest& req, HttpResponse& res) {
    respond(ctx, true, req, res);
  }));
}

}  // namespace plimsoll::api
