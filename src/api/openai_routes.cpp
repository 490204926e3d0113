// OpenAI-compatible routes: POST /v1/completions and /v1/chat/completions,
// as JSON or as SSE chunks ending with `data: [DONE]`.
#include <nlohmann/json.hpp>

#include <chrono>
#include <random>

#include "api/errors.h"
#include "api/generation.h"
#include "api/json_text.h"
#include "api/openai_params.h"
#include "api/request_json.h"
#include "api/route_context.h"

namespace plimsoll::api {
namespace {

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
json chat_logprobs(const std::vector<sched::TokenInfo>& tokens,
                   const std::vector<std::vector<sched::TokenInfo>>& top) {
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

// Completions: {"tokens","token_logprobs","top_logprobs":[{text: logprob}],"text_offset"}
json completion_logprobs(const std::vector<sched::TokenInfo>& tokens,
                         const std::vector<std::vector<sched::TokenInfo>>& top, size_t offset) {
  json out = {{"tokens", json::array()}, {"token_logprobs", json::array()},
              {"top_logprobs", json::array()}, {"text_offset", json::array()}};
  for (size_t i = 0; i < tokens.size(); ++i) {
    out["tokens"].push_back(tokens[i].text);
    out["token_logprobs"].push_back(logprob_json(tokens[i].logprob));
    json alternatives = json::object();
    for (const auto& t : top[i]) alternatives[t.text] = logprob_json(t.logprob);
    out["top_logprobs"].push_back(alternatives);
    out["text_offset"].push_back(offset);
    offset += tokens[i].text.size();
  }
  return out;
}

json logprobs_json(const OpenAiCall& call, const std::vector<sched::TokenInfo>& tokens,
                   const std::vector<std::vector<sched::TokenInfo>>& top, size_t offset) {
  if (!call.logprobs) return nullptr;
  return call.chat ? chat_logprobs(tokens, top) : completion_logprobs(tokens, top, offset);
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

// The prompt's tokens count once per prompt, however many choices it has.
int64_t prompt_tokens(const OpenAiCall& call) { return call.prompt_tokens; }

const std::string& prompt_of(const OpenAiCall& call, size_t item) {
  return call.prompts[item / static_cast<size_t>(call.n)];
}

json envelope(const OpenAiCall& call, const std::string& id, int64_t created, const std::string& model,
              bool chunk) {
  const char* object = call.chat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                 : "text_completion";
  return {{"id", id}, {"object", object}, {"created", created}, {"model", model},
          {"system_fingerprint", "plimsoll"}};
}

json choice_json(const OpenAiCall& call, size_t index, const ItemOutcome& item) {
  const std::string prefix = call.echo ? prompt_of(call, index) : "";
  json choice = {{"index", index}};
  if (call.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", item.final.generated_text}};
  } else {
    choice["text"] = prefix + item.final.generated_text;
  }
  choice["logprobs"] = logprobs_json(call, item.tokens, item.top_tokens, prefix.size());
  choice["finish_reason"] = openai_finish_reason(item.final.finish_reason);
  return choice;
}

class OpenAiStreamFormatter final : public StreamFormatter {
 public:
  OpenAiStreamFormatter(OpenAiCall call, std::string model)
      : call_(std::move(call)), id_(response_id(call_.chat)), created_(unix_seconds()),
        model_(std::move(model)), started_(call_.item_count, false) {}

  std::string on_event(const sched::TokenEvent& event, bool* end) override {
    if (event.error) {
      *end = true;
      return sse_frame(error_body(api_error(*event.error)), true);
    }
    if (event.index >= started_.size()) return "";
    if (event.final) completion_tokens_ += event.generated_tokens;
    json choice = {{"index", event.index}};
    std::string text = event.text;
    if (!started_[event.index] && call_.echo) text = prompt_of(call_, event.index) + text;
    if (call_.chat) {
      choice["delta"] = {{"content", text}};
      if (!started_[event.index]) choice["delta"]["role"] = "assistant";
    } else {
      choice["text"] = text;
    }
    started_[event.index] = true;
    std::vector<sched::TokenInfo> tokens;
    if (event.token.id >= 0) tokens.push_back(event.token);
    std::vector<std::vector<sched::TokenInfo>> top(tokens.size(), event.top_tokens);
    choice["logprobs"] = logprobs_json(call_, tokens, top, 0);
    choice["finish_reason"] = event.final ? json(openai_finish_reason(event.finish_reason)) : json(nullptr);
    json chunk = envelope(call_, id_, created_, model_, true);
    chunk["choices"] = json::array({choice});
    return sse_frame(dump_json(chunk), true);
  }

  std::string on_finish() override {
    std::string out;
    if (call_.include_usage) {
      json chunk = envelope(call_, id_, created_, model_, true);
      chunk["choices"] = json::array();
      chunk["usage"] = usage_json(prompt_tokens(call_), completion_tokens_);
      out += sse_frame(dump_json(chunk), true);
    }
    return out + sse_frame("[DONE]", true);
  }

 private:
  OpenAiCall call_;
  std::string id_;
  int64_t created_;
  std::string model_;
  std::vector<bool> started_;
  int64_t completion_tokens_ = 0;
};

void respond(RouteContext& ctx, Result<OpenAiCall> call, const HttpRequest& req, HttpResponse& res,
             std::shared_ptr<RequestRecorder> recorder) {
  auto fail = [&](const ApiError& e) { recorder->fail(e); send_error(res, e); };
  if (!call) return fail(api_error(call.error()));
  call->build_hold = {};  // the submission's charge covers the items from here
  Submission submission;
  if (auto e = submit(ctx, std::move(call->items), *recorder, &submission)) return fail(*e);
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
  for (size_t i = 0; i < items.size(); ++i) {
    out["choices"].push_back(choice_json(*call, i, items[i]));
    completion_tokens += items[i].final.generated_tokens;
  }
  out["usage"] = usage_json(prompt_tokens(*call), completion_tokens);
  recorder->succeed();
  send_json(res, dump_json(out));
}

}  // namespace

// The JSON tree is dropped and the body released once the call is validated.
void add_openai_routes(RouteTable& routes, RouteContext& ctx) {
  routes.post("/v1/completions", Access::kKey, route_edge(ctx, [&ctx](HttpRequest& req, HttpResponse& res) {
    auto recorder = std::make_shared<RequestRecorder>(ctx.metrics);
    Result<json> body = parse_request_json(req.body);
    if (!body) return send_error(res, api_error(body.error()));
    Result<OpenAiCall> call = parse_completion_call(ctx, *body);
    release_json(*body);
    req.release_body();
    respond(ctx, std::move(call), req, res, recorder);
  }));
  routes.post("/v1/chat/completions", Access::kKey, route_edge(ctx, [&ctx](HttpRequest& req, HttpResponse& res) {
    auto recorder = std::make_shared<RequestRecorder>(ctx.metrics);
    Result<json> body = parse_request_json(req.body);
    if (!body) return send_error(res, api_error(body.error()));
    Result<OpenAiCall> call = parse_chat_call(ctx, *body);
    release_json(*body);
    req.release_body();
    respond(ctx, std::move(call), req, res, recorder);
  }));
}

}  // namespace plimsoll::api
