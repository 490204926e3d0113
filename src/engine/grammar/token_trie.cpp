// Token trie construction (sorted texts, preorder) and the masking pass.
#include "engine/grammar/token_trie.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <numeric>

namespace plimsoll {
namespace {

// An ordinary token to decode after, so each text is the one it has
// mid-sequence (a SentencePiece space is kept, not stripped as after BOS).
int32_t context_token(const TextTokenizer& tok) {
  for (int32_t id = 0; id < static_cast<int32_t>(tok.vocab_size()); ++id) {
    if (!tok.is_special(id) && id != tok.bos_id() && id != tok.eos_id() && !tok.token(id).empty()) return id;
  }
  return -1;
}

}  // namespace

TokenTrie TokenTrie::build(const TextTokenizer& tok) {
  TokenTrie t;
  const auto vocab = static_cast<size_t>(tok.vocab_size());
  const int32_t ctx = context_token(tok);
  t.offsets_.assign(vocab + 1, 0);
  std::string piece;
  for (size_t id = 0; id < vocab; ++id) {
    t.offsets_[id] = static_cast<uint32_t>(t.blob_.size());
    const auto i = static_cast<int32_t>(id);
    if (tok.is_special(i) || i == tok.eos_id() || i == tok.bos_id()) continue;
    piece.clear();
    tok.append_piece_text(ctx, i, &piece);
    if (piece.size() > std::numeric_limits<uint16_t>::max()) continue;
    t.blob_.insert(t.blob_.end(), piece.begin(), piece.end());
  }
  t.offsets_[vocab] = static_cast<uint32_t>(t.blob_.size());
  std::vector<int32_t> order;
  for (size_t id = 0; id < vocab; ++id) {
    if (t.offsets_[id + 1] > t.offsets_[id]) order.push_back(static_cast<int32_t>(id));
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const std::string_view ta = t.text(a), tb = t.text(b);
    return ta != tb ? ta < tb : a < b;
  });
  std::array<bool, 256> single{};
  std::vector<uint32_t> open;  // node index per depth - 1 on the current path
  std::string_view prev;
  for (int32_t id : order) {
    const std::string_view s = t.text(id);
    if (s.size() == 1) single[static_cast<uint8_t>(s[0])] = true;
    size_t lcp = 0;
    while (lcp < s.size() && lcp < prev.size() && lcp < open.size() && s[lcp] == prev[lcp]) ++lcp;
    while (open.size() > lcp) {
      t.end_[open.back()] = static_cast<uint32_t>(t.byte_.size());
      open.pop_back();
    }
    for (size_t d = lcp; d < s.size(); ++d) {
      open.push_back(static_cast<uint32_t>(t.byte_.size()));
      t.byte_.push_back(static_cast<uint8_t>(s[d]));
      t.depth_.push_back(static_cast<uint16_t>(d + 1));
      t.end_.push_back(0);
      t.tok_begin_.push_back(static_cast<uint32_t>(t.tokens_.size()));
    }
    t.tokens_.push_back(id);
    t.max_depth_ = std::max<int64_t>(t.max_depth_, static_cast<int64_t>(s.size()));
    prev = s;
  }
  while (!open.empty()) {
    t.end_[open.back()] = static_cast<uint32_t>(t.byte_.size());
    open.pop_back();
  }
  t.tok_begin_.push_back(static_cast<uint32_t>(t.tokens_.size()));
  t.has_all_bytes_ = std::all_of(single.begin(), single.end(), [](bool b) { return b; });
  static std::atomic<uint32_t> next_id{1};
  t.id_ = next_id.fetch_add(1);
  t.all_bits_.assign((vocab + 63) / 64, 0);
  for (int32_t id : order) t.all_bits_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  return t;
}

std::string_view TokenTrie::text(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) + 1 >= offsets_.size()) return {};
  const auto i = static_cast<size_t>(id);
  return {blob_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]};
}

int64_t TokenTrie::bytes() const {
  return static_cast<int64_t>(byte_.capacity() + depth_.capacity() * 2 + end_.capacity() * 4 +
                              tok_begin_.capacity() * 4 + tokens_.capacity() * 4 + blob_.capacity() +
                              offsets_.capacity() * 4 + all_bits_.capacity() * 8 + sizeof(TokenTrie));
}

namespace {

uint64_t memo_hash(const GTop* tops, size_t n, uint8_t byte) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ byte;
  for (size_t k = 0; k < n; ++k) {
    for (int32_t v : {tops[k].f.dstate, tops[k].f.count, tops[k].below, tops[k].origin}) {
      h ^= static_cast<uint32_t>(v);
      h *= 0x100000001b3ULL;
      h ^= h >> 29;
    }
  }
  return h;
}

bool same_tops(const GTop* a, const GTop* b, size_t n) {
  for (size_t k = 0; k < n; ++k) {
    if (!(a[k].f == b[k].f) || a[k].below != b[k].below || a[k].origin != b[k].origin) return false;
  }
  return true;
}

}  // namespace

// Steps the set at depth d - 1 by `byte` into b.sets (appended), through the
// memo where the set and its result have no link made during this walk.
bool TokenTrie::memo_step(StackWalk& w, WalkBuffers& b, size_t d, uint8_t byte, int32_t stable_links) {
  const GTop* in = b.sets.data() + b.set_at[d - 1];
  const size_t n_in = b.set_len[d - 1];
  const auto stable = [&](const GTop* t, size_t n) {
    return std::all_of(t, t + n, [&](const GTop& x) { return x.below < stable_links; });
  };
  if (n_in > WalkBuffers::kMemoTops || !stable(in, n_in)) return w.step(in, n_in, byte, b.sets);
  const uint64_t h = memo_hash(in, n_in, byte);
  WalkBuffers::MemoEntry& e = b.memo[h & (WalkBuffers::kMemoSlots - 1)];
  if (e.walk == b.walk_id && e.byte == byte && e.n_in == n_in && same_tops(e.in, in, n_in)) {
    b.sets.insert(b.sets.end(), e.out, e.out + e.n_out);
    w.ended_count = e.ended_count;
    return e.can_end;
  }
  const size_t out_begin = b.sets.size();
  const bool was_limited = w.limited;
  w.limited = false;
  const bool can_end = w.step(in, n_in, byte, b.sets);
  const size_t n_out = b.sets.size() - out_begin;
  const GTop* out = b.sets.data() + out_begin;
  if (!w.limited && n_out <= WalkBuffers::kMemoTops && stable(out, n_out)) {
    in = b.sets.data() + b.set_at[d - 1];  // step() may have grown sets
    e.walk = b.walk_id;
    e.byte = byte;
    e.n_in = static_cast<uint8_t>(n_in);
    e.n_out = static_cast<uint8_t>(n_out);
    e.can_end = can_end;
    e.ended_count = w.ended_count;
    std::copy(in, in + n_in, e.in);
    std::copy(out, out + n_out, e.out);
  }
  w.limited = w.limited || was_limited;
  return can_end;
}

void TokenTrie::walk(StackWalk& w, const GTop* tops, size_t n_tops, size_t first, size_t last, size_t base,
                     int64_t budget_bytes, const std::vector<int64_t>& offsets, WalkOut& out, WalkBuffers& b) const {
  const auto max_stacks = static_cast<size_t>(w.lazy().grammar().limits().max_stacks);
  const auto levels = static_cast<size_t>(max_depth_) + 1;
  // step() appends at most max_stacks per level: no reallocation while a
  // level's parent is read through a pointer.
  b.sets.reserve(levels * max_stacks + n_tops);
  b.set_at.resize(levels);
  b.set_len.resize(levels);
  b.pool_at.resize(levels);
  b.sets.assign(tops, tops + n_tops);
  b.set_at[base] = 0;
  b.set_len[base] = static_cast<uint32_t>(n_tops);
  b.pool_at[base] = w.pool.size();
  std::vector<uint64_t>& bits = *out.bits;
  const auto stable_links = static_cast<int32_t>(w.pool.size());  // links below this index outlive the walk
  if (b.memo.empty()) b.memo.resize(WalkBuffers::kMemoSlots);
  if (++b.walk_id == 0) {  // wrapped: forget every entry
    for (WalkBuffers::MemoEntry& e : b.memo) e.walk = 0;
    b.walk_id = 1;
  }
  // A counted walk: the items a stack's bottom frame restarted (tail frames
  // count the item that entered the tail, which needed no room).
  const auto items_of = [&](const GTop& t) -> int64_t {
    GFrame f = t.f;
    for (int32_t l = t.below; l >= 0; l = w.pool[static_cast<size_t>(l)].below) f = w.pool[static_cast<size_t>(l)].f;
    return int64_t{f.count} - out.base_count - (w.lazy().dstate(f.dstate).tail ? 1 : 0);
  };
  const auto j_byte = [](int64_t j) { return static_cast<uint8_t>(std::clamp<int64_t>(j, 0, 254)); };
  size_t i = first;
  while (i < last) {
    const size_t d = depth_[i];
    const size_t parent_end = b.set_at[d - 1] + b.set_len[d - 1];
    b.sets.resize(parent_end);
    w.pool.resize(b.pool_at[d - 1]);
    b.set_at[d] = static_cast<uint32_t>(parent_end);
    bool can_end = false;
    GTop one;
    const int fast = b.set_len[d - 1] == 1 ? w.step_one(b.sets[b.set_at[d - 1]], byte_[i], one) : 2;
    if (fast == 1) {
      b.sets.push_back(one);
    } else if (fast == 2) {
      can_end = memo_step(w, b, d, byte_[i], stable_links);
    }
    const int64_t ended_j = can_end ? int64_t{w.ended_count} - out.base_count : 0;
    b.set_len[d] = static_cast<uint32_t>(b.sets.size() - parent_end);
    b.pool_at[d] = w.pool.size();
    if (b.set_len[d] == 0 && !can_end) {
      i = end_[i];
      continue;
    }
    // A class walk: the top frame popped here; what follows needs the frames below.
    if (can_end && out.pops && end_[i] > i + 1) {
      out.pops->push_back(static_cast<uint32_t>(i));
      if (out.pop_j) out.pop_j->push_back(j_byte(ended_j));
    }
    if (tok_begin_[i] < tok_begin_[i + 1]) {
      int64_t left = can_end ? 0 : Grammar::kUnreachable;
      int64_t left_clamped = left;
      for (size_t k = parent_end; k < b.sets.size(); ++k) {
        const int64_t dk = w.dist(b.sets[k]);
        left = std::min(left, dk);
        left_clamped = std::min(left_clamped, dk - offsets[static_cast<size_t>(b.sets[k].origin)]);
      }
      if (left <= budget_bytes) {
        out.maxd = std::max(out.maxd, left_clamped);
        for (uint32_t t = tok_begin_[i]; t < tok_begin_[i + 1]; ++t) {
          const auto id = static_cast<size_t>(tokens_[t]);
          bits[id >> 6] |= uint64_t{1} << (id & 63);
        }
        if (out.tok_d) {
          const auto v = static_cast<int32_t>(can_end ? -1 : std::min<int64_t>(left_clamped, Grammar::kUnreachable));
          for (uint32_t t = tok_begin_[i]; t < tok_begin_[i + 1]; ++t) (*out.tok_d)[static_cast<size_t>(tokens_[t])] = v;
        }
        if (out.tok_j) {
          // The fewest items restarted on any path that takes the token, and
          // the least bytes left among those paths: at a larger room more
          // paths take it and leave no more than that.
          int64_t min_j = can_end ? ended_j : Grammar::kUnreachable;
          int64_t left_at = 0;
          bool pop_at_min = can_end;
          for (size_t k = parent_end; k < b.sets.size(); ++k) {
            const int64_t j = items_of(b.sets[k]);
            const int64_t dk = w.dist(b.sets[k]) - offsets[static_cast<size_t>(b.sets[k].origin)];
            if (j < min_j) {
              min_j = j;
              left_at = dk;
              pop_at_min = false;
            } else if (j == min_j) {
              left_at = std::min(left_at, dk);
            }
          }
          const uint8_t jb = j_byte(min_j);
          for (uint32_t t = tok_begin_[i]; t < tok_begin_[i + 1]; ++t) (*out.tok_j)[static_cast<size_t>(tokens_[t])] = jb;
          if (out.tok_d) {
            // Levels hold only where the fewest-items paths leave the fewest bytes.
            if (!pop_at_min) {
              if (can_end && ended_j > min_j) out.tok_d_inexact = true;
              for (size_t k = parent_end; k < b.sets.size(); ++k) {
                if (items_of(b.sets[k]) > min_j &&
                    w.dist(b.sets[k]) - offsets[static_cast<size_t>(b.sets[k].origin)] < left_at) {
                  out.tok_d_inexact = true;
                }
              }
            }
            const auto v = static_cast<int32_t>(pop_at_min ? -1 : std::min<int64_t>(left_at, Grammar::kUnreachable));
            for (uint32_t t = tok_begin_[i]; t < tok_begin_[i + 1]; ++t) (*out.tok_d)[static_cast<size_t>(tokens_[t])] = v;
          }
          int64_t& m = (*out.maxd_j)[std::min<size_t>(jb, out.maxd_j->size() - 1)];
          m = std::max(m, left_at);
        }
      }
    }
    i = b.set_len[d] == 0 ? end_[i] : i + 1;
  }
}

void TokenTrie::allowed(StackWalk& w, const std::vector<GTop>& tops, int64_t budget_bytes,
                        const std::vector<int64_t>& offsets, std::vector<uint64_t>& bits, int64_t& maxd,
                        WalkBuffers& b) const {
  WalkOut out{&bits, 0, nullptr};
  walk(w, tops.data(), tops.size(), 0, byte_.size(), 0, budget_bytes, offsets, out, b);
  maxd = out.maxd;
}

void GrammarScratch::reserve(const TokenTrie& trie) {
  const auto vocab = static_cast<size_t>(trie.vocab_size());
  const GrammarLimits limits;
  const auto stacks = static_cast<size_t>(limits.max_stacks);
  const auto levels = static_cast<size_t>(trie.max_depth()) + 1;
  allowed.reserve(vocab + 64);  // + end ids
  kept.reserve(vocab + 64);
  bits.reserve((vocab + 63) / 64);
  tops.reserve(stacks);
  next.reserve(stacks);
  offsets.reserve(stacks);
  key.reserve(stacks * 16);
  stack.pool.reserve(levels * stacks * 4 + stacks * static_cast<size_t>(limits.max_stack_depth));
  stack.work.reserve(stacks * 8);
  stack.seen.reserve(stacks * 8);
  stack.seeds.reserve(stacks);
  walk.sets.reserve(levels * stacks);
  walk.set_at.reserve(levels);
  walk.set_len.reserve(levels);
  walk.pool_at.reserve(levels);
  walk.memo.resize(TokenTrie::WalkBuffers::kMemoSlots);
  tok_d.reserve(vocab);
}

}  // namespace plimsoll
