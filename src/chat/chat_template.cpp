// ChatTemplate: lexer + parser at construction, the evaluator per render;
// the parsed tree is shared by copies and never changes.
#include "chat/chat_template.h"

#include "chat/jinja_eval.h"
#include "chat/jinja_parser.h"

namespace plimsoll {

struct ChatTemplate::Tree {
  jinja::Body body;
};

Result<ChatTemplate> ChatTemplate::parse(std::string_view source) {
  PLIMSOLL_ASSIGN(const std::vector<jinja::Token> tokens, jinja::tokenize(source));
  auto tree = std::make_shared<Tree>();
  PLIMSOLL_ASSIGN(tree->body, jinja::parse(tokens));
  return ChatTemplate(std::move(tree));
}

Result<std::string> ChatTemplate::render_json(const OrderedJson& context, const ChatRenderLimits& limits) const {
  if (!context.is_object()) {
    return make_error(ErrorCode::kInvalidArgument, "chat template: the context is not a JSON object");
  }
  jinja::Object variables;
  for (const auto& [key, value] : context.items()) {
    PLIMSOLL_ASSIGN(jinja::Value v, jinja::Value::from_json(value, 1));
    variables.set(key, std::move(v));
  }
  return jinja::render(tree_->body, variables, limits);
}

Result<std::string> ChatTemplate::render(const ChatRenderInput& input, const ChatRenderLimits& limits) const {
  OrderedJson context = input.extra.is_object() ? input.extra : OrderedJson::object();
  context["messages"] = input.messages;
  context["add_generation_prompt"] = input.add_generation_prompt;
  context["bos_token"] = input.bos_token;
  context["eos_token"] = input.eos_token;
  context["tools"] = input.tools;
  return render_json(context, limits);
}

}  // namespace plimsoll
