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

namespace {

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
  format.render = [tmpl, bos = std::move(bos_token), eos = std::move(eos_token)](
                      const std::vector<ChatMessage>& messages, const ChatRenderBudget& budget,
                      const OrderedJson& tools) -> Result<std::string> {
    ChatRenderInput input;
    for (const ChatMessage& m : messages) {
      OrderedJson message = {{"role", m.role}, {"content", m.content_null ? OrderedJson() : OrderedJson(m.content)}};
      if (m.tool_fields.is_object()) {
        for (const auto& [key, value] : m.tool_fields.items()) message[key] = value;
      }
      input.messages.push_back(std::move(message));
    }
    input.tools = tools;
    input.add_generation_prompt = true;
    input.bos_token = bos;
    input.eos_token = eos;
    return tmpl->render(input, chat_render_limits(budget));
  };
  return format;
}

}  // namespace plimsoll::api
