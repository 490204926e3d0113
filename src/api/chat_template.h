// The chat-template hook: how /v1/chat/completions turns messages into one
// prompt. The server passes the model's template; the fallback is documented.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/result.h"

namespace plimsoll::api {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", ...
  std::string content;  // text (array-of-parts content joined by the route)
};

// Renders a conversation, ending where the assistant's reply begins. An error
// (e.g. a role the template rejects) is answered with 422.
using ChatTemplateFn = std::function<Result<std::string>(const std::vector<ChatMessage>&)>;

// "<role>: <content>\n" per message, then "assistant:" — for models without a template.
Result<std::string> default_chat_template(const std::vector<ChatMessage>& messages);

}  // namespace plimsoll::api
