// ChatTemplate's error values: syntax errors and unsupported constructs name
// what and where (line:column); raise_exception carries the template's message.
#include <gtest/gtest.h>

#include <string>

#include "chat/chat_template.h"

namespace plimsoll {
namespace {

Error parse_error(const std::string& source) {
  Result<ChatTemplate> t = ChatTemplate::parse(source);
  EXPECT_FALSE(t.ok()) << source;
  return t.ok() ? Error{} : t.error();
}

Error render_error(const std::string& source, const OrderedJson& context = OrderedJson::object()) {
  Result<ChatTemplate> t = ChatTemplate::parse(source);
  EXPECT_TRUE(t.ok()) << source << ": " << (t.ok() ? "" : t.error().message);
  if (!t.ok()) return t.error();
  Result<std::string> out = t->render_json(context);
  EXPECT_FALSE(out.ok()) << source << " rendered " << (out.ok() ? *out : "");
  return out.ok() ? Error{} : out.error();
}

TEST(ChatTemplate, SyntaxErrorsGivePositions) {
  Error e = parse_error("{{ 'unclosed }}");
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.message, "chat template 1:16: a string literal is not closed");
  e = parse_error("ab\n{% if x %}no end");
  EXPECT_EQ(e.message, "chat template 2:17: the template ends before {% endif %}");
  e = parse_error("{{ 1 + }}");
  EXPECT_EQ(e.message, "chat template 1:8: expected an expression, found '}}'");
  e = parse_error("{% endfor %}");
  EXPECT_EQ(e.message, "chat template 1:4: unexpected {% endfor %}");
  e = parse_error("{{ x ");
  EXPECT_EQ(e.message, "chat template 1:6: a tag is not closed with }}");
}

TEST(ChatTemplate, UnsupportedConstructsAreNamed) {
  Error e = parse_error("line\n  {% include 'other.jinja' %}");
  EXPECT_EQ(e.code, ErrorCode::kUnsupported);
  EXPECT_EQ(e.message, "chat template 2:4: tag 'include' is not supported");
  e = render_error("{{ 'x' | wordwrap(3) }}");
  EXPECT_EQ(e.code, ErrorCode::kUnsupported);
  EXPECT_EQ(e.message, "chat template 1:8: filter 'wordwrap' on a string is not supported");
  e = render_error("{{ x is divisibleby(3) }}", {{"x", 3}});
  EXPECT_EQ(e.message, "chat template 1:6: test 'divisibleby' is not supported");
  e = render_error("{{ cycler(1, 2) }}");
  EXPECT_EQ(e.message, "chat template 1:10: function 'cycler' is not supported");
  e = render_error("{{ 'a'.zfill(3) }}");
  EXPECT_EQ(e.message, "chat template 1:13: method 'zfill' is not supported");
}

TEST(ChatTemplate, RaiseExceptionCarriesTheMessage) {
  const Error e = render_error("{{ raise_exception('Roles must alternate') }}");
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.message, "chat template raised: Roles must alternate");
}

TEST(ChatTemplate, TypeErrorsNameTheOperation) {
  EXPECT_EQ(render_error("{{ [1] - 2 }}").message,
            "chat template 1:8: cannot apply '-' to a list and a integer");
  EXPECT_EQ(render_error("{{ missing.attr }}").message,
            "chat template 1:11: cannot read 'attr' of an undefined value");
  EXPECT_EQ(render_error("{{ 1 // 0 }}").message, "chat template 1:6: division by zero in 1 // 0");
}

TEST(ChatTemplate, RendersAConversation) {
  Result<ChatTemplate> t = ChatTemplate::parse(
      "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}{{ tools is none }}");
  ASSERT_TRUE(t.ok()) << t.error().message;
  ChatRenderInput input;
  input.messages = OrderedJson::parse(R"([{"role": "user", "content": " hi "}])");
  input.add_generation_prompt = true;
  input.bos_token = "<s>";
  Result<std::string> out = t->render(input);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "<s><user>hi<assistant>true");
}

TEST(ChatTemplate, DeepNestingIsAnErrorNotACrash) {
  const std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_EQ(parse_error(deep).code, ErrorCode::kUnsupported);
  EXPECT_EQ(parse_error("{{ " + std::string(5000, '-') + "1 }}").code, ErrorCode::kUnsupported);
  std::string blocks;
  for (int i = 0; i < 1000; ++i) blocks += "{% if true %}";
  EXPECT_EQ(parse_error(blocks).code, ErrorCode::kUnsupported);
}

TEST(ChatTemplate, DeepMacroRecursionIsAnErrorNotACrash) {
  const Error e = render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.message, "chat template 1:4: macro calls nest deeper than the call-depth budget of 64");
}

}  // namespace
}  // namespace plimsoll
