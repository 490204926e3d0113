// Builds TGI/OpenAI request bodies and reads their answers into client types.
// nlohmann exceptions are caught here and become protocol errors.
#include "client/wire.h"

#include <cstdlib>

namespace plimsoll::client::wire {
namespace {

using json = nlohmann::json;

ClientError protocol_error(const std::string& what) {
  return make_client_error(ErrorKind::kProtocol, what);
}

ErrorKind kind_for_status(int status) {
  switch (status) {
    case 400: case 413: case 422: return ErrorKind::kValidation;
    case 429: return ErrorKind::kOverloaded;
    case 502: case 503: case 504: return ErrorKind::kUnavailable;
    case 424: case 500: return ErrorKind::kGeneration;
    default: return ErrorKind::kHttp;
  }
}

ErrorKind kind_for_error_type(const std::string& type, ErrorKind fallback) {
  if (type == "validation" || type == "invalid_request_error") return ErrorKind::kValidation;  // TGI, OpenAI
  if (type == "overloaded" || type == "rate_limit_exceeded") return ErrorKind::kOverloaded;
  if (type == "unavailable") return ErrorKind::kUnavailable;
  if (type == "generation" || type == "incomplete_generation") return ErrorKind::kGeneration;
  return fallback;
}

std::optional<json> parse_json(std::string_view text) {
  json out = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) return std::nullopt;
  return out;
}

std::string snippet(const std::string& body) {
  constexpr size_t kMax = 200;
  return body.size() <= kMax ? body : body.substr(0, kMax) + "...";
}

std::optional<int64_t> optional_int(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

Generation tgi_generation(const json& item) {
  Generation g;
  g.text = item.at("generated_text").get<std::string>();
  auto details = item.find("details");
  if (details != item.end() && details->is_object()) {
    g.generated_tokens = optional_int(*details, "generated_tokens");
    g.finish_reason = details->value("finish_reason", "");
  }
  return g;
}

void add_header_tokens(const HttpReply& reply, GenerationList* list) {
  char* end = nullptr;
  const long long header = std::strtoll(reply.generated_tokens.c_str(), &end, 10);
  if (!reply.generated_tokens.empty() && end && *end == '\0') {
    list->generated_tokens = header;
    return;
  }
  for (const Generation& g : list->items) list->generated_tokens += g.generated_tokens.value_or(0);
}

template <typename F>
auto parse_ok_body(const HttpReply& reply, F&& read) -> decltype(read(json())) {
  if (reply.status < 200 || reply.status >= 300) return error_from_reply(reply);
  std::optional<json> body = parse_json(reply.body);
  if (!body) return protocol_error("the answer is not JSON: " + snippet(reply.body));
  try {
    return read(*body);
  } catch (const json::exception& e) {
    return protocol_error(std::string("unexpected answer (") + e.what() + "): " + snippet(reply.body));
  }
}

}  // namespace

json tgi_parameters(const GenerateParams& p) {
  json out = json::object();
  if (p.max_new_tokens) out["max_new_tokens"] = *p.max_new_tokens;
  if (p.temperature) out["temperature"] = *p.temperature;
  if (p.top_p) out["top_p"] = *p.top_p;
  if (p.top_k) out["top_k"] = *p.top_k;
  if (p.seed) out["seed"] = *p.seed;
  if (p.do_sample) out["do_sample"] = *p.do_sample;
  if (!p.stop.empty()) out["stop"] = p.stop;
  if (p.details) out["details"] = true;
  if (p.extra.is_object()) out.update(p.extra);
  return out;
}

json openai_fields(const OpenAiParams& p) {
  json out = json::object();
  if (!p.model.empty()) out["model"] = p.model;
  if (p.max_tokens) out["max_tokens"] = *p.max_tokens;
  if (p.temperature) out["temperature"] = *p.temperature;
  if (p.top_p) out["top_p"] = *p.top_p;
  if (p.seed) out["seed"] = *p.seed;
  if (!p.stop.empty()) out["stop"] = p.stop;
  if (p.extra.is_object()) out.update(p.extra);
  return out;
}

std::string generate_body(const std::vector<std::string>& inputs, bool as_list, const GenerateParams& params) {
  json body = {{"inputs", as_list ? json(inputs) : json(inputs.at(0))}};
  json parameters = tgi_parameters(params);
  if (!parameters.empty()) body["parameters"] = parameters;
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string completions_body(const std::vector<std::string>& prompts, bool as_list, const OpenAiParams& params) {
  json body = openai_fields(params);
  body["prompt"] = as_list ? json(prompts) : json(prompts.at(0));
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string chat_body(const std::vector<ChatMessage>& messages, const OpenAiParams& params) {
  json body = openai_fields(params);
  json list = json::array();
  for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
  body["messages"] = list;
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

double parse_retry_after_seconds(const std::string& header) {
  if (header.empty()) return 0;
  char* end = nullptr;
  const double seconds = std::strtod(header.c_str(), &end);
  if (end == header.c_str() || *end != '\0' || !(seconds > 0) || seconds > 86400) return 0;
  return seconds;
}

ClientError error_from_reply(const HttpReply& reply) {
  ClientError e;
  e.http_status = reply.status;
  e.kind = kind_for_status(reply.status);
  e.retry_after_seconds = parse_retry_after_seconds(reply.retry_after);
  e.message = "HTTP " + std::to_string(reply.status) + ": " + snippet(reply.body);
  std::optional<json> body = parse_json(reply.body);
  if (!body || !body->is_object()) return e;
  auto error = body->find("error");
  if (error == body->end()) return e;
  if (error->is_string()) {  // TGI: {"error": "...", "error_type": "..."}
    e.message = error->get<std::string>();
    auto type = body->find("error_type");
    if (type != body->end() && type->is_string()) e.error_type = type->get<std::string>();
  } else if (error->is_object()) {  // OpenAI: {"error": {"message", "type"}}
    auto message = error->find("message");
    if (message != error->end() && message->is_string()) e.message = message->get<std::string>();
    auto type = error->find("type");
    if (type != error->end() && type->is_string()) e.error_type = type->get<std::string>();
  }
  if (e.kind == ErrorKind::kHttp) e.kind = kind_for_error_type(e.error_type, e.kind);
  return e;
}

ClientResult<GenerationList> parse_generate(const HttpReply& reply, size_t items, bool as_list) {
  return parse_ok_body(reply, [&](const json& body) -> ClientResult<GenerationList> {
    GenerationList list;
    if (as_list != body.is_array()) {
      return protocol_error(std::string("expected ") + (as_list ? "a list" : "an object") + ": " + snippet(reply.body));
    }
    if (as_list) {
      for (const json& item : body) list.items.push_back(tgi_generation(item));
    } else {
      list.items.push_back(tgi_generation(body));
    }
    if (list.items.size() != items) {
      return protocol_error("asked for " + std::to_string(items) + " generations, got " +
                            std::to_string(list.items.size()));
    }
    add_header_tokens(reply, &list);
    return list;
  });
}

ClientResult<GenerationList> parse_completions(const HttpReply& reply, size_t items) {
  return parse_ok_body(reply, [&](const json& body) -> ClientResult<GenerationList> {
    GenerationList list;
    list.items.resize(items);
    std::vector<bool> seen(items, false);
    for (const json& choice : body.at("choices")) {
      const size_t index = choice.value("index", size_t{0});
      if (index >= items || seen[index]) return protocol_error("bad choice index " + std::to_string(index));
      seen[index] = true;
      list.items[index].text = choice.at("text").get<std::string>();
      if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
        list.items[index].finish_reason = choice["finish_reason"].get<std::string>();
      }
    }
    for (bool s : seen) {
      if (!s) return protocol_error("fewer choices than prompts: " + snippet(reply.body));
    }
    auto usage = body.find("usage");
    if (usage != body.end() && usage->is_object()) list.generated_tokens = usage->value("completion_tokens", 0);
    if (items == 1 && list.generated_tokens > 0) list.items[0].generated_tokens = list.generated_tokens;
    return list;
  });
}

ClientResult<Generation> parse_chat(const HttpReply& reply) {
  return parse_ok_body(reply, [&](const json& body) -> ClientResult<Generation> {
    const json& choice = body.at("choices").at(0);
    Generation g;
    const json& content = choice.at("message").at("content");
    g.text = content.is_null() ? "" : content.get<std::string>();
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
      g.finish_reason = choice["finish_reason"].get<std::string>();
    }
    auto usage = body.find("usage");
    if (usage != body.end() && usage->is_object()) g.generated_tokens = optional_int(*usage, "completion_tokens");
    return g;
  });
}

ClientResult<ServerInfo> parse_info(const HttpReply& reply) {
  return parse_ok_body(reply, [&](const json& body) -> ClientResult<ServerInfo> {
    if (!body.is_object()) return protocol_error("/info is not an object: " + snippet(reply.body));
    ServerInfo info;
    info.raw = body;
    if (body.contains("model_id") && body["model_id"].is_string()) info.model_id = body["model_id"].get<std::string>();
    info.max_input_tokens = optional_int(body, "max_input_tokens").value_or(
        optional_int(body, "max_input_length").value_or(0));
    info.max_total_tokens = optional_int(body, "max_total_tokens").value_or(0);
    info.max_batch_total_tokens = optional_int(body, "max_batch_total_tokens").value_or(0);
    info.max_concurrent_requests = optional_int(body, "max_concurrent_requests").value_or(0);
    info.max_queued_tokens = optional_int(body, "max_queued_tokens").value_or(0);
    info.max_client_batch_size = optional_int(body, "max_client_batch_size").value_or(0);
    info.safe_client_batch_size = optional_int(body, "safe_client_batch_size").value_or(0);
    return info;
  });
}

ClientResult<StreamEvent> parse_stream_event(std::string_view data) {
  std::optional<json> body = parse_json(data);
  if (!body || !body->is_object()) return protocol_error("a stream event is not a JSON object: " + std::string(data));
  StreamEvent event;
  try {
    if (body->contains("error")) {
      HttpReply as_reply{200, std::string(data), "", ""};
      ClientError e = error_from_reply(as_reply);
      e.http_status = 0;
      e.kind = kind_for_error_type(e.error_type, ErrorKind::kGeneration);
      event.error = e;
      return event;
    }
    const json& token = body->at("token");
    event.token = StreamToken{token.value("id", int64_t{-1}), token.value("text", ""), token.value("special", false)};
    auto text = body->find("generated_text");
    if (text != body->end() && text->is_string()) event.final = tgi_generation(*body);
  } catch (const json::exception& e) {
    return protocol_error(std::string("unexpected stream event (") + e.what() + "): " + std::string(data));
  }
  return event;
}

}  // namespace plimsoll::client::wire
