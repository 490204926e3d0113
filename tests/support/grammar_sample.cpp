// One constrained output for a JSON schema, as the server would produce it with
// random logits: the schema compiled by grammar_from_json_schema (default
// GrammarLimits), a TokenTrie over a real vocabulary, then GrammarMatcher's
// mask / advance each step, drawing the highest of the allowed random logits
// (seeded std::mt19937), until the output is finished or an allowed end id is
// drawn. Prints the output's text (the trie texts of the drawn tokens) on
// stdout. Used by tests/grammar_corpus/check_corpus.mjs (ctest grammar.corpus).
//
//   grammar_sample SCHEMA.json SEED [VOCAB]
//     VOCAB: a GGUF / tokenizer.json / tokenizer.bin (default: the shared
//            ggml-vocab-llama-spm.gguf)
//   exit 0: the output is complete; 1: bad arguments, unreadable files or the
//   schema does not compile (the error names the file); 2: generation got
//   stuck (nothing allowed) or reached the token cap without completing.
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar_sources.h"
#include "engine/grammar/token_trie.h"
#include "test_paths.h"
#include "tokenizer/tokenizer_loading.h"

namespace {

using namespace plimsoll;

constexpr int64_t kMaxTokens = 4000;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: grammar_sample SCHEMA.json SEED [VOCAB]\n");
    return 1;
  }
  const std::string schema_path = argv[1];
  const std::string vocab_path =
      argc > 3 ? std::string(argv[3]) : testing::shared_dir() + "/vocab-tests/ggml-vocab-llama-spm.gguf";
  unsigned long seed = 0;
  try {
    seed = std::stoul(argv[2]);
  } catch (const std::exception&) {
    std::fprintf(stderr, "grammar_sample: SEED must be a number, got '%s'\n", argv[2]);
    return 1;
  }

  std::ifstream in(schema_path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read the file\n", schema_path.c_str());
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json schema = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) {
    std::fprintf(stderr, "%s: not valid JSON\n", schema_path.c_str());
    return 1;
  }
  auto grammar = grammar_from_json_schema(schema, GrammarLimits{});
  if (!grammar.ok()) {
    std::fprintf(stderr, "%s: schema does not compile: %s\n", schema_path.c_str(), grammar.error().message.c_str());
    return 1;
  }

  auto loaded = load_tokenizer_alone(vocab_path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s: %s\n", vocab_path.c_str(), loaded.error().message.c_str());
    return 1;
  }
  const TextTokenizer& tokenizer = *loaded->tokenizer;
  const TokenTrie trie = TokenTrie::build(tokenizer);
  std::vector<int32_t> end_ids;
  if (tokenizer.eos_id() >= 0) end_ids.push_back(tokenizer.eos_id());

  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> logits(static_cast<size_t>(trie.vocab_size()));
  GrammarScratch scratch;
  scratch.reserve(trie);
  GrammarMatcher matcher(std::move(*grammar));
  std::string output;
  for (int64_t t = 0; t < kMaxTokens; ++t) {
    if (matcher.finished()) break;
    for (float& l : logits) l = normal(rng);
    if (!matcher.mask(logits, trie, kMaxTokens - t, end_ids, scratch)) {
      std::fprintf(stderr, "%s: seed %lu: stuck after %lld tokens: no token is allowed; output so far: %s\n",
                   schema_path.c_str(), seed, static_cast<long long>(t), output.c_str());
      return 2;
    }
    int32_t best = -1;
    float best_logit = -std::numeric_limits<float>::infinity();
    for (size_t id = 0; id < logits.size(); ++id) {
      if (logits[id] > best_logit) {
        best_logit = logits[id];
        best = static_cast<int32_t>(id);
      }
    }
    if (best < 0) {
      std::fprintf(stderr, "%s: seed %lu: stuck after %lld tokens: every logit is masked; output so far: %s\n",
                   schema_path.c_str(), seed, static_cast<long long>(t), output.c_str());
      return 2;
    }
    bool is_end = false;
    for (int32_t e : end_ids) is_end = is_end || e == best;
    if (is_end) {
      if (!matcher.complete()) {
        std::fprintf(stderr, "%s: seed %lu: the end id was allowed before the output was complete: %s\n",
                     schema_path.c_str(), seed, output.c_str());
        return 2;
      }
      break;
    }
    output += trie.text(best);
    matcher.advance(best, trie, scratch);
  }
  if (!matcher.complete()) {
    std::fprintf(stderr, "%s: seed %lu: no complete output within %lld tokens: %s\n", schema_path.c_str(), seed,
                 static_cast<long long>(kMaxTokens), output.c_str());
    return 2;
  }
  std::fwrite(output.data(), 1, output.size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}
