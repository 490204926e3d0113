// Budget checks and the budget-counted text sink.
#include "chat/jinja_budget.h"

#include <algorithm>

namespace plimsoll::jinja {
namespace {

std::string at(SourcePos pos) { return "chat template " + pos.text() + ": "; }

}  // namespace

Status Budget::step(SourcePos pos, int64_t bytes) {
  steps_ += 1 + std::max<int64_t>(bytes, 0) / 1024;
  PLIMSOLL_TRY(poll_());  // the preparation's deadline and cancel flag, every few thousand steps
  if (steps_ <= limits_.max_steps) return Status::ok_status();
  return make_error(ErrorCode::kInvalidArgument,
                    at(pos) + "the render passed its step budget of " + std::to_string(limits_.max_steps) + " steps");
}

int64_t Budget::room_bytes() const { return std::max<int64_t>(0, limits_.max_held_bytes - meter_.held_bytes()); }

Error Budget::held_error(int64_t bytes, SourcePos pos, std::string_view what) const {
  return make_error(ErrorCode::kOutOfMemory,
                    at(pos) + std::string(what) + " would build " + std::to_string(bytes) + " bytes with " +
                        std::to_string(meter_.held_bytes()) + " held: over the render's held-bytes budget of " +
                        std::to_string(limits_.max_held_bytes) + " bytes");
}

Status Budget::reserve(int64_t bytes, SourcePos pos, std::string_view what) {
  if (bytes > room_bytes()) return held_error(bytes, pos, what);
  return step(pos, bytes);
}

Status Budget::enter_call(SourcePos pos) {
  if (call_depth_ >= limits_.max_call_depth) {
    return make_error(ErrorCode::kInvalidArgument, at(pos) + "macro calls nest deeper than the call-depth budget of " +
                                                       std::to_string(limits_.max_call_depth));
  }
  ++call_depth_;
  return Status::ok_status();
}

TextSink::~TextSink() { budget_.meter()->sub(counted_bytes_); }

void TextSink::recount() {
  const auto bytes = static_cast<int64_t>(text_.capacity());
  budget_.meter()->add(bytes - counted_bytes_);
  counted_bytes_ = bytes;
}

int64_t TextSink::room_bytes() const {
  int64_t room = budget_.room_bytes();
  if (is_output_) room = std::min(room, budget_.limits().max_output_bytes - static_cast<int64_t>(text_.size()));
  return std::max<int64_t>(room, 0);
}

Error TextSink::full_error(int64_t bytes, SourcePos pos) const {
  if (is_output_ && static_cast<int64_t>(text_.size()) + bytes > budget_.limits().max_output_bytes) {
    return make_error(ErrorCode::kOutOfMemory,
                      at(pos) + "the rendered text would pass the output budget of " +
                          std::to_string(budget_.limits().max_output_bytes) + " bytes");
  }
  return budget_.held_error(bytes, pos, "writing text");
}

Status TextSink::append(std::string_view text, SourcePos pos) {
  const auto bytes = static_cast<int64_t>(text.size());
  if (bytes > room_bytes()) return full_error(bytes, pos);
  PLIMSOLL_TRY(budget_.step(pos, bytes));
  text_.append(text);
  recount();
  return Status::ok_status();
}

Status TextSink::append_value(const Value& value, SourcePos pos) {
  if (value.is_string()) return append(value.as_string(), pos);
  const size_t before = text_.size();
  const int64_t room = room_bytes();
  if (!value.append_output(&text_, before + static_cast<size_t>(room))) {
    text_.resize(before);
    return full_error(room + 1, pos);
  }
  PLIMSOLL_TRY(budget_.step(pos, static_cast<int64_t>(text_.size() - before)));
  recount();
  return Status::ok_status();
}

std::string TextSink::take() {
  budget_.meter()->sub(counted_bytes_);
  counted_bytes_ = 0;
  return std::move(text_);
}

}  // namespace plimsoll::jinja
