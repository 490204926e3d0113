// Per-token cost of constrained decoding: the grammar mask (token trie walk +
// logits fill) at several vocabularies, for a JSON schema, any JSON object and
// a regex, over a constrained generation driven by random logits (argmax of
// the allowed tokens, fixed seed). Also the naive mask (every token's bytes
// through the automaton) for comparison.
//
//   grammar_mask [tokens] VOCAB...   VOCAB: synthetic:N or a GGUF / tokenizer file
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/random_model.h"
#include "engine/grammar/grammar_sources.h"
#include "engine/grammar/token_trie.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_loading.h"

namespace {

using namespace plimsoll;
using Clock = std::chrono::steady_clock;

std::unique_ptr<TextTokenizer> load(const std::string& spec) {
  if (spec.rfind("synthetic:", 0) == 0) {
    auto t = Tokenizer::create(synthetic_vocab(std::stoll(spec.substr(10))));
    if (!t.ok()) return nullptr;
    return std::make_unique<Tokenizer>(std::move(*t));
  }
  auto m = load_tokenizer_alone(spec);
  if (!m.ok()) {
    std::fprintf(stderr, "%s: %s\n", spec.c_str(), m.error().message.c_str());
    return nullptr;
  }
  return std::move(m->tokenizer);
}

struct Stats {
  std::vector<double> us;
  double pct(double p) {
    std::sort(us.begin(), us.end());
    return us.empty() ? 0 : us[std::min(us.size() - 1, static_cast<size_t>(p * static_cast<double>(us.size())))];
  }
  double mean() const {
    double s = 0;
    for (double v : us) s += v;
    return us.empty() ? 0 : s / static_cast<double>(us.size());
  }
};

void run(const char* name, const Grammar& g, const TokenTrie& trie, int32_t eos, int64_t tokens, bool walk) {
  std::mt19937_64 rng(42);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(trie.vocab_size()));
  constexpr int64_t kPoolRows = 61;
  std::vector<float> pool(logits.size() * kPoolRows);
  for (float& l : pool) l = normal(rng);
  std::vector<float> plain(logits.size());
  GrammarScratch scratch;
  // mask = fill (the grammar's allowed-token bitset: what MaskAhead computes
  // beside the forward pass) + apply (the model's logits copied into the
  // sampler's buffer through the bitset, at sampling) - copy (the plain copy
  // an unconstrained sequence pays there instead; 0 where apply took less).
  // Apply and copy alternate
  // which goes first, so neither always finds the logits in cache.
  Stats mask_stats, fill_stats, apply_stats, copy_stats, walk_stats, advance_stats, cold_stats, warm_stats;
  std::vector<uint64_t> bits;
  const int32_t ends[1] = {eos};
  size_t allowed_sum = 0;
  int64_t done = 0;
  auto us = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
  // Tokens per generated output (the length budget steers it to close).
  const int64_t per_output = std::max<int64_t>(200, g.min_output_bytes() + 200);
  int64_t first_classes = 0;  // frame classes walked by the end of the first output
  for (bool first_output = true; done < tokens; first_output = false) {
    if (!first_output && first_classes == 0) {
      const auto lock = g.lazy().lock();
      first_classes = std::max<int64_t>(1, g.lazy().classes_made);
    }
    GrammarMatcher m(std::shared_ptr<const Grammar>(&g, [](const Grammar*) {}));
    for (int64_t t = 0; t < per_output && done < tokens; ++t, ++done) {
      // The model's logits: a row of a pool drawn once (drawing 152k normals a
      // token would take most of a profile).
      const std::span<const float> row(pool.data() + (done % kPoolRows) * logits.size(), logits.size());
      auto copy_row = [&] {
        const auto c0 = Clock::now();
        std::copy(row.begin(), row.end(), plain.begin());
        copy_stats.us.push_back(us(c0, Clock::now()));
      };
      if (done % 2 == 0) copy_row();
      // The mask first: the DFA states it needs are built within its time.
      const auto t0 = Clock::now();
      if (!m.fill(trie, per_output - t, scratch, bits)) break;
      const auto t1 = Clock::now();
      m.apply(row, logits, bits, ends);
      const auto t2 = Clock::now();
      if (done % 2 == 1) copy_row();
      fill_stats.us.push_back(us(t0, t1));
      apply_stats.us.push_back(us(t1, t2));
      mask_stats.us.push_back(us(t0, t1) + std::max(0.0, us(t1, t2) - copy_stats.us.back()));  // (p99: no credit for less)
      (first_output ? cold_stats : warm_stats).us.push_back(us(t0, t2) - copy_stats.us.back());  // (for means: unclamped)
      if (walk) {
        const auto n1 = Clock::now();
        m.mask_uncached(plain, trie, per_output - t, ends, scratch);
        walk_stats.us.push_back(us(n1, Clock::now()));
      }
      allowed_sum += static_cast<size_t>(std::count_if(logits.begin(), logits.end(), [](float l) { return l > -1e30f; }));
      const auto id = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      if (id == eos) break;
      const auto a0 = Clock::now();
      m.advance(id, trie, scratch);
      advance_stats.us.push_back(us(a0, Clock::now()));
    }
  }
  int64_t hits = 0, misses = 0, dstates = 0, used = 0, classes = 0, derived = 0, drops = 0, budgeted = 0, walks = 0;
  {
    const auto lock = g.lazy().lock();
    classes = g.lazy().classes_made;
    derived = g.lazy().classes_derived;
    drops = g.lazy().mask_drops;
    hits = g.lazy().mask_hits;
    misses = g.lazy().mask_misses;
    budgeted = g.lazy().budget_masks;
    walks = g.lazy().budget_walks;
    dstates = g.lazy().num_dstates();
    used = g.lazy().used_bytes();
  }
  const double fill_mean = fill_stats.mean(), fill_p50 = fill_stats.pct(0.5), fill_p99 = fill_stats.pct(0.99);
  const double apply_mean = apply_stats.mean(), apply_p99 = apply_stats.pct(0.99);
  // The mean: fill's, plus what apply takes beyond the copy on average (a per-token
  // clamp at 0 would count the two timings' noise as cost).
  const double mask_mean = fill_mean + std::max(0.0, apply_mean - copy_stats.mean());
  std::printf("  %-12s mask us/token: mean %8.1f p50 %8.1f p99 %8.1f max %8.1f | fill mean %7.1f p50 %6.1f p99 %7.1f"
              " | apply mean %5.1f p99 %5.1f | plain copy mean %5.1f\n", name, mask_mean, mask_stats.pct(0.5),
              mask_stats.pct(0.99), mask_stats.pct(1.0), fill_mean, fill_p50, fill_p99, apply_mean, apply_p99,
              copy_stats.mean());
  std::printf("  %-12s cache hits %.0f%% (%lld under a binding budget, %lld of them walked) | first output mean %8.1f, later %6.1f p99 %6.1f | uncached walk mean %8.1f"
              " p99 %8.1f | advance mean %5.1f | allowed mean %zu | %lld DFA states, %lld frame classes walked (%lld in the first output) + %lld derived, %lld drops, lazy %.2f MiB\n",
              "",
              100.0 * static_cast<double>(hits) / static_cast<double>(std::max<int64_t>(1, hits + misses)),
              static_cast<long long>(budgeted), static_cast<long long>(walks),
              cold_stats.mean(), warm_stats.mean(), warm_stats.pct(0.99), walk_stats.mean(), walk_stats.pct(0.99), advance_stats.mean(),
              allowed_sum / std::max<size_t>(1, mask_stats.us.size()), static_cast<long long>(dstates),
              static_cast<long long>(classes), static_cast<long long>(first_classes), static_cast<long long>(derived), static_cast<long long>(drops),
              static_cast<double>(used) / (1 << 20));
}

// The default large schema: a nested model as zod 4 / Pydantic write it
// (integers bounded +-(2^53 - 1), enums, optional and nullable fields,
// arrays, strings up to 500 characters, a recursive $ref).
const char* kLargeSchema = R"({
  "type": "object",
  "$defs": {
    "money": {"type": "object", "properties": {"amount": {"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991},
              "currency": {"enum": ["USD", "EUR", "GBP", "JPY"]}}, "required": ["amount", "currency"], "additionalProperties": false},
    "item": {"type": "object", "properties": {
        "sku": {"type": "string", "maxLength": 500}, "name": {"type": "string", "maxLength": 500},
        "qty": {"type": "integer", "minimum": 1, "maximum": 9007199254740991}, "price": {"$ref": "#/$defs/money"},
        "notes": {"type": ["string", "null"], "maxLength": 500},
        "children": {"type": "array", "items": {"$ref": "#/$defs/item"}, "maxItems": 8}},
      "required": ["sku", "name", "qty", "price"], "additionalProperties": false}
  },
  "properties": {
    "id": {"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991},
    "status": {"enum": ["pending", "paid", "shipped", "cancelled"]},
    "customer": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 500}, "email": {"type": "string", "format": "email"},
        "phone": {"anyOf": [{"type": "string", "maxLength": 40}, {"type": "null"}]},
        "age": {"type": "integer", "minimum": 0, "maximum": 150}},
      "required": ["name", "email"], "additionalProperties": false},
    "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "minItems": 1, "maxItems": 100},
    "total": {"$ref": "#/$defs/money"},
    "created": {"type": "string", "format": "date-time"},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 500}},
    "meta": {}
  },
  "required": ["id", "status", "customer", "items", "total"],
  "additionalProperties": false
})";

}  // namespace

//   grammar_mask [tokens] [--schema FILE] VOCAB...
int main(int argc, char** argv) {
  int first = 1;
  int64_t tokens = 2000;
  if (argc > 1 && std::isdigit(static_cast<unsigned char>(argv[1][0]))) {
    tokens = std::stoll(argv[1]);
    first = 2;
  }
  std::string large_text = kLargeSchema;
  std::string large_name = "built-in nested model";
  if (argc > first + 1 && std::string(argv[first]) == "--schema") {
    std::ifstream in(argv[first + 1]);
    std::stringstream ss;
    ss << in.rdbuf();
    large_text = ss.str();
    large_name = argv[first + 1];
    first += 2;
  }
  const nlohmann::json large = nlohmann::json::parse(large_text, nullptr, false);
  if (large.is_discarded()) {
    std::fprintf(stderr, "%s: not JSON\n", large_name.c_str());
    return 1;
  }
  const nlohmann::json schema = nlohmann::json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string"}, "age": {"type": "integer"}, "email": {"type": "string"},
      "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
      "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                  "required": ["city", "zip"], "additionalProperties": false},
      "active": {"type": "boolean"}, "score": {"type": "number"}
    },
    "required": ["name", "age", "email", "tags", "address", "active", "score"],
    "additionalProperties": false
  })");
  for (int a = first; a < argc; ++a) {
    auto tok = load(argv[a]);
    if (!tok) return 1;
    const auto b0 = Clock::now();
    const TokenTrie trie = TokenTrie::build(*tok);
    const double build_ms = std::chrono::duration<double, std::milli>(Clock::now() - b0).count();
    std::printf("%s: vocab %lld, trie %lld nodes, %.1f MiB, built in %.0f ms, all bytes: %s, longest token %lld bytes\n",
                argv[a], static_cast<long long>(tok->vocab_size()), static_cast<long long>(trie.num_nodes()),
                static_cast<double>(trie.bytes()) / (1 << 20), build_ms, trie.has_all_bytes() ? "yes" : "no",
                static_cast<long long>(trie.max_depth()));
    GrammarLimits limits;
    // GRAMMAR_BENCH_LAZY_MIB: another lazy budget (what sizing it by the vocabulary would buy).
    if (const char* mib = std::getenv("GRAMMAR_BENCH_LAZY_MIB")) limits.max_lazy_bytes = std::stoll(mib) << 20;
    const auto c0 = Clock::now();
    auto s = grammar_from_json_schema(schema, limits);
    const double compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - c0).count();
    const auto l0 = Clock::now();
    auto l = grammar_from_json_schema(large, limits);
    const double large_ms = std::chrono::duration<double, std::milli>(Clock::now() - l0).count();
    auto o = grammar_any_json_object(limits);
    auto r = grammar_from_regex(R"(\d{4}-\d{2}-\d{2} [A-Z][a-z]+( [a-z]+){0,8}\.)", limits);
    if (!s.ok() || !l.ok() || !o.ok() || !r.ok()) {
      std::fprintf(stderr, "compile failed: %s\n", !l.ok() ? l.error().message.c_str() : "small schema / regex");
      return 1;
    }
    std::printf("  schema: %lld rules, %lld NFA states, compiled in %.2f ms; large (%s): %lld rules, %lld NFA states,"
                " compiled in %.2f ms; grammar bytes charged %.1f MiB\n",
                static_cast<long long>((*s)->num_rules()), static_cast<long long>((*s)->num_nfa_states()), compile_ms,
                large_name.c_str(), static_cast<long long>((*l)->num_rules()),
                static_cast<long long>((*l)->num_nfa_states()), large_ms, static_cast<double>((*l)->bytes()) / (1 << 20));
    const bool walk = std::getenv("GRAMMAR_BENCH_NO_WALK") == nullptr;  // for profiling the mask alone
    run("large_schema", **l, trie, tok->eos_id(), tokens, walk);
    run("json_schema", **s, trie, tok->eos_id(), tokens, walk);
    run("json_object", **o, trie, tok->eos_id(), tokens, walk);
    run("regex", **r, trie, tok->eos_id(), tokens, walk);
  }
  return 0;
}
