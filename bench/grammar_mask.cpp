// Per-token cost of constrained decoding: the grammar mask (token trie walk +
// logits fill) at several vocabularies, for a JSON schema, any JSON object and
// a regex, over a constrained generation driven by random logits (argmax of
// the allowed tokens, fixed seed). Also the naive mask (every token's bytes
// through the automaton) for comparison.
//
//   grammar_mask [tokens] VOCAB...   VOCAB: synthetic:N or a GGUF / tokenizer file
#include <algorithm>
#include <chrono>
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

// Naive mask: every token's text through the automaton.
size_t naive_mask(const Grammar& g, int32_t state, const TokenTrie& trie, std::vector<float>& logits) {
  size_t n = 0;
  for (int32_t id = 0; id < static_cast<int32_t>(logits.size()); ++id) {
    const std::string_view t = trie.text(id);
    int32_t s = state;
    for (char c : t) {
      s = g.step(s, static_cast<uint8_t>(c));
      if (s < 0) break;
    }
    if (t.empty() || s < 0) logits[static_cast<size_t>(id)] = -1e30f; else ++n;
  }
  return n;
}

void run(const char* name, const Grammar& g, const TokenTrie& trie, int32_t eos, int64_t tokens) {
  std::mt19937_64 rng(42);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(trie.vocab_size()));
  GrammarScratch scratch;
  Stats trie_stats, walk_stats, naive_stats;
  const int32_t ends[1] = {eos};
  size_t allowed_sum = 0;
  int64_t done = 0;
  const int64_t per_output = 200;  // tokens per generated output (the length budget steers it to close)
  while (done < tokens) {
    GrammarMatcher m(std::shared_ptr<const Grammar>(&g, [](const Grammar*) {}));
    for (int64_t t = 0; t < per_output && done < tokens; ++t, ++done) {
      for (float& l : logits) l = normal(rng);
      std::vector<float> copy = logits;
      std::vector<float> copy2 = logits;
      const auto n0 = Clock::now();
      naive_mask(g, m.state(), trie, copy);
      const auto n1 = Clock::now();
      m.mask_uncached(copy2, trie, per_output - t, ends, scratch);
      const auto n2 = Clock::now();
      walk_stats.us.push_back(std::chrono::duration<double, std::micro>(n2 - n1).count());
      const auto t0 = Clock::now();
      m.mask(logits, trie, per_output - t, ends, scratch);
      const auto t1 = Clock::now();
      trie_stats.us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      naive_stats.us.push_back(std::chrono::duration<double, std::micro>(n1 - n0).count());
      allowed_sum += scratch.allowed.size();
      const auto id = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      if (id == eos) break;
      m.advance(id, trie);
    }
  }
  std::printf("  %-12s mask us/token: mean %8.1f p50 %8.1f p99 %8.1f (cache hits %.0f%%) | trie walk alone mean %8.1f"
              " p99 %8.1f | naive scan mean %8.1f | allowed mean %zu\n",
              name, trie_stats.mean(), trie_stats.pct(0.5), trie_stats.pct(0.99),
              100.0 * static_cast<double>(scratch.cache.hits) /
                  static_cast<double>(std::max<int64_t>(1, scratch.cache.hits + scratch.cache.misses)),
              walk_stats.mean(), walk_stats.pct(0.99), naive_stats.mean(),
              allowed_sum / std::max<size_t>(1, trie_stats.us.size()));
}

}  // namespace

int main(int argc, char** argv) {
  int first = 1;
  int64_t tokens = 2000;
  if (argc > 1 && std::isdigit(static_cast<unsigned char>(argv[1][0]))) {
    tokens = std::stoll(argv[1]);
    first = 2;
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
    std::printf("%s: vocab %lld, trie %lld nodes, %.1f MiB, built in %.0f ms, all bytes: %s\n", argv[a],
                static_cast<long long>(tok->vocab_size()), static_cast<long long>(trie.num_nodes()),
                static_cast<double>(trie.bytes()) / (1 << 20), build_ms, trie.has_all_bytes() ? "yes" : "no");
    const GrammarLimits limits;
    const auto c0 = Clock::now();
    auto s = grammar_from_json_schema(schema, limits);
    const double compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - c0).count();
    auto o = grammar_any_json_object(limits);
    auto r = grammar_from_regex(R"(\d{4}-\d{2}-\d{2} [A-Z][a-z]+( [a-z]+){0,8}\.)", limits);
    if (!s.ok() || !o.ok() || !r.ok()) return 1;
    std::printf("  schema: %lld states x %lld classes, %lld bytes, compiled in %.1f ms; json_object: %lld states\n",
                static_cast<long long>((*s)->num_states()), static_cast<long long>((*s)->num_classes()),
                static_cast<long long>((*s)->bytes()), compile_ms, static_cast<long long>((*o)->num_states()));
    run("json_schema", **s, trie, tok->eos_id(), tokens);
    run("json_object", **o, trie, tok->eos_id(), tokens);
    run("regex", **r, trie, tok->eos_id(), tokens);
  }
  return 0;
}
