// ChatTemplate: a Hugging Face chat_template (Jinja) parsed once and rendered
// for a conversation; the public face of the plimsoll_chat module.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>

#include "chat/jinja_budget.h"
#include "core/result.h"

namespace plimsoll {

// A render's budgets (steps, output bytes, held bytes, macro call depth; see
// jinja::RenderLimits for the defaults): exceeding one is an error naming it.
using ChatRenderLimits = jinja::RenderLimits;

// JSON with its object keys in document order (dicts print in that order).
using OrderedJson = nlohmann::ordered_json;

struct ChatRenderInput {
  OrderedJson messages = OrderedJson::array();  // [{"role": ..., "content": ...}, ...]
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  OrderedJson tools;                            // null: none (as transformers passes it)
  OrderedJson extra = OrderedJson::object();    // more variables for the template
};

class ChatTemplate {
 public:
  // Syntax errors are kInvalidArgument, constructs we lack kUnsupported; both
  // say "chat template <line>:<column>: ...".
  static Result<ChatTemplate> parse(std::string_view source);

  // Variables: messages, add_generation_prompt, bos_token, eos_token, tools and
  // `extra`'s members. raise_exception(msg) gives kInvalidArgument
  // "chat template raised: <msg>". A passed budget of output or held bytes is
  // kOutOfMemory, of steps or call depth kInvalidArgument; each message names
  // the budget and its value.
  Result<std::string> render(const ChatRenderInput& input, const ChatRenderLimits& limits = {}) const;
  // Renders with the members of a JSON object as the variables.
  Result<std::string> render_json(const OrderedJson& context, const ChatRenderLimits& limits = {}) const;

 private:
  struct Tree;
  explicit ChatTemplate(std::shared_ptr<const Tree> tree) : tree_(std::move(tree)) {}
  std::shared_ptr<const Tree> tree_;
};

}  // namespace plimsoll
