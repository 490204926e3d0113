// ChatTemplate: a Hugging Face chat_template (Jinja) parsed once and rendered
// for a conversation; the public face of the plimsoll_chat module.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"

namespace plimsoll {

namespace jinja {
struct Stmt;
}

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
  // "chat template raised: <msg>".
  Result<std::string> render(const ChatRenderInput& input) const;
  // Renders with the members of a JSON object as the variables.
  Result<std::string> render_json(const OrderedJson& context) const;

 private:
  struct Tree;
  explicit ChatTemplate(std::shared_ptr<const Tree> tree) : tree_(std::move(tree)) {}
  std::shared_ptr<const Tree> tree_;
};

}  // namespace plimsoll
