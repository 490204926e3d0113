// A counting SAX handler in front of nlohmann's own tree builder: each event
// is counted what the tree will hold for it before it is built, the count is
// charged to the body budget in steps, and parsing stops at the first event
// over a limit.
#include "api/request_json.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "api/body_budget.h"

namespace plimsoll::api {
namespace {

// What nlohmann 3.11's tree holds per element on glibc (x86-64), rounded up:
// an array slot is a 16-byte json in a vector grown by doubling (<= 2 slots
// per element), plus the old buffer while it grows or the flattening stack of
// json's destructor (one more); objects are std::map nodes (32-byte node
// header + key std::string + json, 80 B + malloc's 16); containers and
// strings live behind a pointer (their object + malloc's 16); a string longer
// than the 15 bytes kept inline has its own block.
constexpr int64_t kArraySlotBytes = 48;
constexpr int64_t kObjectMemberBytes = 96;
constexpr int64_t kObjectBytes = 64;
constexpr int64_t kArrayBytes = 48;
constexpr int64_t kStringBytes = 48;
constexpr size_t kInlineChars = 15;
constexpr int64_t kHeapBlockBytes = 32;  // malloc header + rounding to 16

int64_t text_bytes(size_t length) {
  return length > kInlineChars ? static_cast<int64_t>(length) + kHeapBlockBytes : 0;
}

// How long a tree step waits for the bytes of cut bodies to come back, and
// how often it looks.
constexpr std::chrono::milliseconds kRoomWait{1000};
constexpr std::chrono::milliseconds kRoomPoll{2};

// The tree's bytes as charged to the request's reservation, in steps taken
// from the budget.
class TreeCharge {
 public:
  TreeCharge(BodyReservation* reservation, int64_t cap) : reservation_(reservation), cap_(cap) {
    if (reservation_ && !reservation_->budget()) reservation_ = nullptr;  // nothing to charge
  }

  // The tree now counts `tree_bytes` (at most the cap): charge up to it.
  std::optional<Error> cover(int64_t tree_bytes) {
    if (!reservation_) return std::nullopt;
    while (charged_ < tree_bytes) {
      const int64_t step = std::min(std::max(kTreeChargeStepBytes, tree_bytes - charged_), cap_ - charged_);
      if (!take(step)) return overloaded(step);
      charged_ += step;
    }
    return std::nullopt;
  }

  // The parse is over; on an error (the tree is destroyed) every byte
  // charged for it goes back.
  void finish(bool ok) {
    if (!reservation_ || ok) return;
    reservation_->shrink(charged_);
    charged_ = 0;
  }

 private:
  bool take(int64_t step) {
    const auto deadline = std::chrono::steady_clock::now() + kRoomWait;
    while (!reservation_->try_grow(step)) {
      const BodyBudget::Room room = reservation_->budget()->make_room(step, /*requester=*/0, BodyBudget::Clock::now(),
                                                                      reservation_->tenant());
      if (room == BodyBudget::Room::kRefuse) return false;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(kRoomPoll);
    }
    return true;
  }

  Error overloaded(int64_t step) const {
    const BodyBudget& b = *reservation_->budget();
    return make_error(ErrorCode::kOverloaded,
                      fmt::format("request bodies in flight hold {} of the {}-byte budget "
                                  "(--max-body-bytes-in-flight): no room for the next {} bytes of this body's JSON "
                                  "tree ({} charged so far)",
                                  b.used_bytes(), b.total_bytes(), step, charged_));
  }

  BodyReservation* reservation_;
  const int64_t cap_;
  int64_t charged_ = 0;
};

class BoundedBuilder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  BoundedBuilder(json& root, const JsonLimits& limits, TreeCharge& charge)
      : dom_(root, false), limits_(limits), tree_charge_(charge) {}

  bool null() { return value(0) && dom_.null(); }
  bool boolean(bool v) { return value(0) && dom_.boolean(v); }
  bool number_integer(number_integer_t v) { return value(0) && dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) { return value(0) && dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) { return value(0) && dom_.number_float(v, s); }
  bool string(string_t& v) { return value(kStringBytes + text_bytes(v.size())) && dom_.string(v); }
  bool binary(binary_t& v) { return value(kStringBytes + static_cast<int64_t>(v.size())) && dom_.binary(v); }
  bool key(string_t& k) { return charge(kObjectMemberBytes + text_bytes(k.size())) && dom_.key(k); }
  bool start_object(std::size_t n) { return open(false, kObjectBytes) && dom_.start_object(n); }
  bool end_object() { return close() && dom_.end_object(); }
  bool start_array(std::size_t n) { return open(true, kArrayBytes) && dom_.start_array(n); }
  bool end_array() { return close() && dom_.end_array(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    error_ = make_error(ErrorCode::kInvalidArgument,
                        fmt::format("the request body is not valid JSON (byte {}): {}", position, e.what()));
    return false;
  }

  const std::optional<Error>& error() const { return error_; }

 private:
  // A value in its parent: an array slot, or nothing more (an object member's
  // node was charged at its key; the root is the caller's json).
  bool value(int64_t own_bytes) {
    const bool in_array = !parents_.empty() && parents_.back();
    return charge(own_bytes + (in_array ? kArraySlotBytes : 0));
  }
  bool open(bool is_array, int64_t own_bytes) {
    if (static_cast<int64_t>(parents_.size()) >= limits_.max_depth) {
      error_ = make_error(ErrorCode::kInvalidArgument,
                          fmt::format("the request body nests arrays and objects deeper than {} levels",
                                      limits_.max_depth));
      return false;
    }
    if (!value(own_bytes)) return false;
    parents_.push_back(is_array);
    return true;
  }
  bool close() {
    parents_.pop_back();
    return true;
  }
  bool charge(int64_t bytes) {
    tree_bytes_ += bytes;
    if (tree_bytes_ > limits_.max_tree_bytes) {
      error_ = make_error(ErrorCode::kInvalidArgument,
                          fmt::format("the request body's JSON would take more than {} bytes to hold ({} per body "
                                      "byte): too many small values",
                                      limits_.max_tree_bytes, kJsonTreeBytesPerBodyByte));
      return false;
    }
    error_ = tree_charge_.cover(tree_bytes_);
    return !error_;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  JsonLimits limits_;
  TreeCharge& tree_charge_;
  std::vector<bool> parents_;  // true: array; at most max_depth entries
  int64_t tree_bytes_ = 0;
  std::optional<Error> error_;
};

Result<json> parse(std::string_view body, BodyReservation* reservation, JsonLimits limits) {
  if (limits.max_tree_bytes <= 0) limits.max_tree_bytes = json_tree_limit_bytes(static_cast<int64_t>(body.size()));
  json root;
  TreeCharge charge(reservation, limits.max_tree_bytes);
  BoundedBuilder builder(root, limits, charge);
  const bool ok = json::sax_parse(body.begin(), body.end(), &builder);
  if (!ok || builder.error()) {
    release_json(root);
    charge.finish(false);
    if (builder.error()) return *builder.error();
    return make_error(ErrorCode::kInvalidArgument, "the request body is not valid JSON");
  }
  charge.finish(true);
  return root;
}

}  // namespace

Result<json> parse_request_json(std::string_view body, BodyReservation& reservation, JsonLimits limits) {
  return parse(body, &reservation, limits);
}

Result<json> parse_request_json(std::string_view body, JsonLimits limits) { return parse(body, nullptr, limits); }

nlohmann::ordered_json member_in_order(std::string_view body, const std::vector<std::string>& path) {
  using ordered = nlohmann::ordered_json;
  // A key at depth d (1: the top object's) is kept when it is path[d - 1];
  // everything below the path's end is kept.
  const ordered::parser_callback_t on_path = [&path](int depth, ordered::parse_event_t event, ordered& parsed) {
    if (event != ordered::parse_event_t::key || depth < 1 || static_cast<size_t>(depth) > path.size()) return true;
    return parsed == path[static_cast<size_t>(depth) - 1];
  };
  ordered tree = ordered::parse(body, on_path, /*allow_exceptions=*/false);
  ordered* at = &tree;
  for (const std::string& key : path) {
    if (!at->is_object()) return ordered();
    const auto it = at->find(key);
    if (it == at->end()) return ordered();
    at = &*it;
  }
  ordered member = std::move(*at);
  return member;
}

int64_t counted_tree_bytes(const json& root) {
  int64_t total = 0;
  std::vector<const json*> todo{&root};
  while (!todo.empty()) {
    const json* v = todo.back();
    todo.pop_back();
    if (v->is_string()) total += kStringBytes + text_bytes(v->get_ref<const std::string&>().size());
    if (v->is_binary()) total += kStringBytes + static_cast<int64_t>(v->get_binary().size());
    if (v->is_array()) {
      total += kArrayBytes + kArraySlotBytes * static_cast<int64_t>(v->size());
      for (const json& item : *v) todo.push_back(&item);
    }
    if (v->is_object()) {
      total += kObjectBytes;
      for (auto it = v->begin(); it != v->end(); ++it) {
        total += kObjectMemberBytes + text_bytes(it.key().size());
        todo.push_back(&it.value());
      }
    }
  }
  return total;
}

}  // namespace plimsoll::api
