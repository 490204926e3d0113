// libFuzzer target for the chat-template renderer (src/chat): the input is a
// template, then (after the first NUL byte, if any) a message's content. The
// render runs under small budgets; checks: it never crashes (ASan/UBSan
// report UB, overflow and use-after-free), and a successful render keeps to
// its output budget.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "chat/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view source = input.substr(0, split);
  const std::string content(split == std::string_view::npos ? std::string_view() : input.substr(split + 1));
  auto parsed = plimsoll::ChatTemplate::parse(source);
  if (!parsed.ok()) return 0;
  plimsoll::ChatRenderLimits limits;
  limits.max_steps = 100'000;
  limits.max_output_bytes = 64 << 10;
  limits.max_held_bytes = 1 << 20;
  plimsoll::ChatRenderInput in;
  in.messages.push_back({{"role", "user"}, {"content", content}});
  in.messages.push_back({{"role", "assistant"}, {"content", "ok"}});
  in.add_generation_prompt = true;
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  const auto out = parsed->render(in, limits);
  if (out.ok() && static_cast<int64_t>(out->size()) > limits.max_output_bytes) std::abort();
  return 0;
}
