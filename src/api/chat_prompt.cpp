// The fallback chat template (one "<role>: <content>" line per message and an
// open "assistant:" turn) and the model's own Jinja template.
#include "api/chat_prompt.h"

#include <memory>


namespace plimsoll::api {

Result<std::string> default_chat_template(const std::vector<ChatMessage>& messages, const ChatRenderBudget&,
                                          const OrderedJson&) {
  std::string prompt;
  for (const ChatMessage& m : messages) prompt += m.role + ": " + m.content + "\n";
  prompt += "assistant:";
  return prompt;
}

OrderedJson parsed_arguments(const OrderedJson& arguments) {
  if (!arguments.is_string()) return arguments;
  OrderedJson parsed = OrderedJson::parse(arguments.get_ref<const std::string&>(), nullptr, false);
  return parsed.is_object() ? parsed : arguments;
}

namespace {

// What a template does with the forms clients send, found by rendering probes.
struct TemplateTraits {
  bool typed_content = false;     // renders [{"type": "text", "text": t}] as it renders t
  bool string_arguments = false;  // prints a tool call's arguments text unchanged
};

constexpr std::string_view kProbeText = "plimsoll_probe_7f3a";

Result<std::string> render_probe(const ChatTemplate& tmpl, OrderedJson messages, OrderedJson tools = {}) {
  ChatRenderInput input;
  input.messages = std::move(messages);
  input.tools = std::move(tools);
  input.add_generation_prompt = true;
  return tmpl.render(input);
}

bool renders_typed_content(const ChatTemplate& tmpl) {
  const OrderedJson text = std::string(kProbeText);
  const OrderedJson parts = OrderedJson::array({{{"type", "text"}, {"text", text}}});
  auto as_string = render_probe(tmpl, OrderedJson::array({{{"role", "user"}, {"content", text}}}));
  auto as_parts = render_probe(tmpl, OrderedJson::array({{{"role", "user"}, {"content", parts}}}));
  return as_string.ok() && as_parts.ok() && *as_string == *as_parts &&
         as_string->find(kProbeText) != std::string::npos;
}

// Compact JSON text, which tojson would print escaped inside quotes and a parsed
// object's tojson with spaces: only a template that prints the text as sent shows it.
bool prints_string_arguments(const ChatTemplate& tmpl) {
  const std::string arguments = "{\"q\":\"" + std::string(kProbeText) + "\"}";
  const OrderedJson call = {{"id", "call12345"}, {"type", "function"},
                            {"function", {{"name", "probe"}, {"arguments", arguments}}}};
  const OrderedJson messages = OrderedJson::array({{{"role", "user"}, {"content", "q"}},
                                                   {{"role", "assistant"}, {"content", nullptr},
                                                    {"tool_calls", OrderedJson::array({call})}}});
  const OrderedJson tools = OrderedJson::array({{{"type", "function"},
                                                 {"function", {{"name", "probe"}, {"parameters", {{"type", "object"}}}}}}});
  auto out = render_probe(tmpl, messages, tools);
  return out.ok() && out->find(arguments) != std::string::npos;
}

TemplateTraits template_traits(const ChatTemplate& tmpl) {
  return {renders_typed_content(tmpl), prints_string_arguments(tmpl)};
}

// One message as the template gets it (see model_chat_format).
OrderedJson template_message(const ChatMessage& m, const TemplateTraits& traits) {
  OrderedJson content;
  if (!m.content_null) content = traits.typed_content && m.content_parts.is_array() ? m.content_parts : OrderedJson(m.content);
  OrderedJson message = {{"role", m.role}, {"content", std::move(content)}};
  if (!m.tool_fields.is_object()) return message;
  for (const auto& [key, value] : m.tool_fields.items()) message[key] = value;
  if (traits.string_arguments || !message.contains("tool_calls") || !message["tool_calls"].is_array()) return message;
  for (OrderedJson& call : message["tool_calls"]) {
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
    OrderedJson& fn = call["function"];
    if (fn.contains("arguments")) fn["arguments"] = parsed_arguments(fn["arguments"]);
  }
  return message;
}

ChatRenderLimits chat_render_limits(const ChatRenderBudget& budget) {
  ChatRenderLimits limits;
  if (budget.max_prompt_bytes > 0) {
    limits.max_output_bytes = budget.max_prompt_bytes;
    limits.max_held_bytes = 2 * budget.max_prompt_bytes + (int64_t{4} << 20);
  }
  return limits;
}

}  // namespace

int64_t chat_render_reserve_bytes(const ChatRenderBudget& budget) {
  const ChatRenderLimits limits = chat_render_limits(budget);
  return limits.max_held_bytes + limits.max_output_bytes;
}

Result<ChatPromptFormat> model_chat_format(std::string_view source, const std::string& source_name,
                                           std::string bos_token, std::string eos_token) {
  auto parsed = ChatTemplate::parse(source);
  if (!parsed) return parsed.error().with_context(source_name);
  auto tmpl = std::make_shared<const ChatTemplate>(std::move(parsed).value());
  ChatPromptFormat format;
  format.add_special = false;
  format.tool_format = detect_tool_format(source);
  const TemplateTraits traits = template_traits(*tmpl);
  format.render = [tmpl, traits, bos = std::move(bos_token), eos = std::move(eos_token)](
                      const std::vector<ChatMessage>& messages, const ChatRenderBudget& budget,
                      const OrderedJson& tools) -> Result<std::string> {
    ChatRenderInput input;
    for (const ChatMessage& m : messages) input.messages.push_back(template_message(m, traits));
    input.tools = tools;
    input.add_generation_prompt = true;
    input.bos_token = bos;
    input.eos_token = eos;
    return tmpl->render(input, chat_render_limits(budget));
  };
  return format;
}

}  // namespace plimsoll::api
