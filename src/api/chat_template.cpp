// The fallback chat template: one "<role>: <content>" line per message and
// an open "assistant:" turn.
#include "api/chat_template.h"

namespace plimsoll::api {

Result<std::string> default_chat_template(const std::vector<ChatMessage>& messages) {
  std::string prompt;
  for (const ChatMessage& m : messages) prompt += m.role + ": " + m.content + "\n";
  prompt += "assistant:";
  return prompt;
}

}  // namespace plimsoll::api
