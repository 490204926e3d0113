// The batched, paged engine against the reference forward pass: many prompts
// in one batch, prefill chunked under a small token budget so chunks cross
// block boundaries; greedy tokens must be equal, f32 logits within 1e-4.
#include "engine/batch_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "convert/random_model.h"
#include "kernels/kernels.h"
#include "model/decoder_reference.h"
#include "random_decoder.h"

namespace plimsoll {
namespace {

ModelConfig small_config() {
  ModelConfig c;
  c.dim = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.ffn_dim = 96;
  c.vocab_size = 300;
  c.max_seq_len = 128;
  return c;
}

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

struct RefRun {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;  // per generated position
};

RefRun reference_greedy(DecoderReference& ref, const std::vector<int32_t>& prompt, int64_t n_new) {
  ReferenceKvCache cache(ref.config(), static_cast<int64_t>(prompt.size()) + n_new);
  std::vector<float> logits(static_cast<size_t>(ref.config().vocab_size));
  RefRun run;
  for (size_t p = 0; p < prompt.size(); ++p) ref.forward(prompt[p], static_cast<int64_t>(p), cache, logits.data());
  for (int64_t i = 0; i < n_new; ++i) {
    run.logits.push_back(logits);
    const int32_t next = argmax(logits);
    run.tokens.push_back(next);
    ref.forward(next, static_cast<int64_t>(prompt.size()) + i, cache, logits.data());
  }
  return run;
}

struct Seq {
  std::vector<int32_t> tokens;  // prompt, then generated
  int64_t prompt_len = 0;
  int64_t done = 0;  // tokens whose KV is written
  BlockTable table;
  std::vector<std::vector<float>> logits;
};

// Tolerance on logits: f32 weights: 1e-4 relative (only summation order
// differs). Q8_0 weights quantize each activation row to int8 inside matmul: a
// 1e-7 change of an activation (attention's summation order) can move one
// value across a rounding boundary, which shifts a logit by about one
// quantization step of |w| x amax/127 (~1e-2 here), so 0.05 there.
void run_batched(const ModelConfig& c, const TensorStore& tensors, float tolerance, int64_t step_tokens,
                 int64_t block_tokens, int64_t n_new, DType kv_dtype = DType::kF32) {
  auto weights = bind_decoder_weights(c, tensors);
  ASSERT_TRUE(weights.ok()) << weights.error().message;
  DecoderReference ref(c, *weights);
  // 32 prompts of lengths 1..63
  std::vector<Seq> seqs(32);
  for (size_t s = 0; s < seqs.size(); ++s) {
    const int64_t len = 1 + static_cast<int64_t>((s * 37) % 63);
    for (int64_t i = 0; i < len; ++i) seqs[s].tokens.push_back(static_cast<int32_t>((s * 131 + i * 17) % 299 + 1));
    seqs[s].prompt_len = len;
  }
  const int64_t max_len = 64 + n_new;
  auto pool = KvBlockPool::create(c, static_cast<int64_t>(seqs.size()) * blocks_for_tokens(max_len, block_tokens),
                                  block_tokens, kv_dtype);
  ASSERT_TRUE(pool.ok());
  ThreadPool threads(2);
  const auto sizes = BatchEngine::workspace_sizes(c, step_tokens, 32, 2, max_len);
  auto engine = BatchEngine::create(c, *weights, **pool, sizes, &threads);
  ASSERT_TRUE(engine.ok());
  ASSERT_TRUE((*engine)->warm_up().ok());
  for (Seq& s : seqs) {
    for (int64_t b = 0; b < blocks_for_tokens(max_len, block_tokens); ++b) s.table.blocks.push_back(*(*pool)->allocate());
  }
  // Steps: decode tokens first, then prefill chunks, within step_tokens.
  for (int guard = 0; guard < 10000; ++guard) {
    std::vector<SeqStep> plan;
    std::vector<Seq*> owners;
    int64_t budget = step_tokens;
    for (Seq& s : seqs) {  // decodes
      const int64_t total = s.prompt_len + n_new;
      if (s.done >= s.prompt_len && s.done < total - 1 && budget > 0 && static_cast<int64_t>(s.tokens.size()) > s.done) {
        plan.push_back({std::span(s.tokens).subspan(static_cast<size_t>(s.done), 1), s.done, &s.table, true});
        owners.push_back(&s);
        --budget;
      }
    }
    for (Seq& s : seqs) {  // prefill chunks
      if (s.done < s.prompt_len && budget > 0 && static_cast<int64_t>(plan.size()) < 32) {
        const int64_t n = std::min(budget, s.prompt_len - s.done);
        plan.push_back({std::span(s.tokens).subspan(static_cast<size_t>(s.done), static_cast<size_t>(n)), s.done,
                        &s.table, s.done + n == s.prompt_len});
        owners.push_back(&s);
        budget -= n;
      }
    }
    if (plan.empty()) break;
    auto logits = (*engine)->step(plan);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    size_t row = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
      Seq& s = *owners[i];
      s.done += static_cast<int64_t>(plan[i].tokens.size());
      if (!plan[i].want_logits) continue;
      std::span<const float> l = logits->subspan(row * static_cast<size_t>(c.vocab_size), static_cast<size_t>(c.vocab_size));
      ++row;
      s.logits.emplace_back(l.begin(), l.end());
      s.tokens.push_back(argmax(l));
    }
  }
  for (size_t si = 0; si < seqs.size(); ++si) {
    Seq& s = seqs[si];
    const std::vector<int32_t> prompt(s.tokens.begin(), s.tokens.begin() + s.prompt_len);
    RefRun want = reference_greedy(ref, prompt, n_new);
    const std::vector<int32_t> got(s.tokens.begin() + s.prompt_len, s.tokens.end());
    EXPECT_EQ(got, want.tokens) << "prompt " << si << " of length " << s.prompt_len;
    ASSERT_EQ(s.logits.size(), want.logits.size());
    for (size_t k = 0; k < want.logits.size(); ++k) {
      for (size_t v = 0; v < want.logits[k].size(); ++v) {
        const float a = s.logits[k][v], b = want.logits[k][v];
        ASSERT_LE(std::fabs(a - b), tolerance * std::max(1.0f, std::fabs(b)))
            << "prompt " << si << " token " << k << " logit " << v;
      }
    }
  }
}

// f32 logits within 1e-4 on the exact f32 paths; AMX runs f32 matmuls of 32+
// tokens with bf16 hi/lo splits (2^-15 of sum |w*x| per dot), held to 5e-4.
void run_batched(DType dtype, int64_t step_tokens, int64_t block_tokens, int64_t n_new) {
  const ModelConfig c = small_config();
  auto model = random_llama_in_memory(c, dtype, 11);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const kernels::Isa best = kernels::active_isa();
  for (kernels::Isa isa : {kernels::Isa::kAvx512, best}) {
    if (!kernels::set_isa(isa)) continue;
    const bool bf16_splits = isa == kernels::Isa::kAmx && kernels::amx_bf16_usable();
    const float tolerance = dtype != DType::kF32 ? 5e-2f : bf16_splits ? 5e-4f : 1e-4f;
    SCOPED_TRACE(kernels::isa_name(isa));
    run_batched(c, model->tensors, tolerance, step_tokens, block_tokens, n_new);
  }
  kernels::set_isa(best);
}

TEST(BatchEngine, MatchesReferenceF32SmallChunksCrossingBlocks) { run_batched(DType::kF32, 24, 16, 8); }
TEST(BatchEngine, MatchesReferenceF32TinyBlocks) { run_batched(DType::kF32, 40, 4, 6); }
TEST(BatchEngine, MatchesReferenceQ8_0) { run_batched(DType::kQ8_0, 32, 16, 6); }

// An f16 KV cache (serve's default) rounds each key and value to 11 bits
// (relative 2^-12): f32 weights, exact AVX-512 matmuls, logits within 1e-2 of
// the f32 reference and the same greedy tokens, on the AVX-512 and scalar paths.
TEST(BatchEngine, MatchesReferenceWithAnF16KvCache) {
  const ModelConfig c = small_config();
  auto model = random_llama_in_memory(c, DType::kF32, 11);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const kernels::Isa best = kernels::active_isa();
  for (kernels::Isa isa : {kernels::Isa::kAvx512, kernels::Isa::kScalar}) {
    if (!kernels::set_isa(isa)) continue;
    SCOPED_TRACE(kernels::isa_name(isa));
    run_batched(c, model->tensors, 1e-2f, 24, 16, 8, DType::kF16);
    run_batched(c, model->tensors, 1e-2f, 40, 4, 6, DType::kF16);
  }
  kernels::set_isa(best);
}

// The other architectures' switches, f32, through the same batched-vs-reference run.
ModelConfig gpt2_config() {
  ModelConfig c = small_config();
  c.arch = "gpt2";
  c.n_kv_heads = c.n_heads;
  c.norm = NormKind::kLayer;
  c.positions = PositionKind::kLearned;
  c.ffn = FfnKind::kGeluTanh;
  c.qkv_bias = c.out_bias = c.ffn_bias = true;
  c.tied_embeddings = true;
  return c;
}

TEST(BatchEngine, MatchesReferenceGpt2FusedQkv) {
  const ModelConfig c = gpt2_config();
  testing::RandomDecoder model(c, 21, /*fused_qkv=*/true);
  run_batched(c, model.tensors(), 1e-4f, 24, 16, 6);
}

TEST(BatchEngine, MatchesReferenceBloomAlibi) {
  ModelConfig c = gpt2_config();
  c.arch = "bloom";
  c.dim = 48;
  c.n_heads = c.n_kv_heads = 6;  // not a power of two: the extra ALiBi slopes
  c.positions = PositionKind::kAlibi;
  c.embed_norm = true;
  testing::RandomDecoder model(c, 22, /*fused_qkv=*/true);
  run_batched(c, model.tensors(), 1e-4f, 40, 4, 6);
}

TEST(BatchEngine, MatchesReferenceQwen2Style) {
  ModelConfig c = small_config();
  c.rope_layout = RopeLayout::kHalfSplit;
  c.qkv_bias = true;
  c.tied_embeddings = true;
  testing::RandomDecoder model(c, 23, /*fused_qkv=*/false);
  run_batched(c, model.tensors(), 1e-4f, 24, 16, 6);
}

// Gemma's switches: local layers (window 7, shorter than most prompts, so prefill
// pieces straddle it) with their own RoPE base, soft-capped scores (every layer,
// the scalar windowed kernel) and logits, post norms, GeGLU, qk-norm, query
// scale, sqrt(dim) embeddings, head_dim != dim / heads; f32 and f16 KV.
ModelConfig gemma_config(float attn_softcap) {
  ModelConfig c = small_config();
  c.arch = attn_softcap > 0 ? "gemma2" : "gemma3";
  c.n_layers = 3;
  c.head_dim_override = 24;
  c.rope_layout = RopeLayout::kHalfSplit;
  c.ffn = FfnKind::kGeGlu;
  c.post_norms = c.embed_scale = c.tied_embeddings = true;
  c.qk_norm = attn_softcap == 0;
  c.query_scale = 0.3f;
  c.attn_softcap = attn_softcap;
  c.final_softcap = 5.0f;
  c.sliding_window = 7;
  c.local_layers = {1, 0, 1};
  c.rope_theta_local = attn_softcap > 0 ? 0.0f : 100.0f;
  c.rope_theta = 1e6f;
  return c;
}

TEST(BatchEngine, MatchesReferenceGemmaSlidingWindowAndSoftcaps) {
  for (float cap : {0.0f, 2.0f}) {
    const ModelConfig c = gemma_config(cap);
    testing::RandomDecoder model(c, 24, /*fused_qkv=*/false);
    SCOPED_TRACE(c.arch);
    run_batched(c, model.tensors(), 1e-4f, 24, 4, 6);
    run_batched(c, model.tensors(), 1e-2f, 40, 16, 6, DType::kF16);
  }
}

// Prompt logprobs: with want_all_logits every prompt token's row reaches the
// sink (all but the returned one of the last chunk), equal to the reference
// forward's logits at that position; chunks of 7 tokens, 3 rows per head
// matmul, two sequences interleaved, so rows cross chunks and flushes.
struct RowRecorder final : LogitRowSink {
  std::map<std::pair<size_t, int64_t>, std::vector<float>> rows;
  std::vector<size_t> owners;
  void row(size_t seq, int64_t pos, std::span<const float> logits) override {
    EXPECT_TRUE(rows.emplace(std::make_pair(owners[seq], pos), std::vector<float>(logits.begin(), logits.end())).second);
  }
};

TEST(BatchEngine, PromptRowsEqualTheReferenceAtEveryPosition) {
  const ModelConfig c = small_config();
  auto model = random_llama_in_memory(c, DType::kF32, 11);
  ASSERT_TRUE(model.ok());
  auto weights = bind_decoder_weights(c, model->tensors);
  ASSERT_TRUE(weights.ok());
  DecoderReference ref(c, *weights);
  auto pool = KvBlockPool::create(c, 16, 16);
  ThreadPool threads(2);
  auto engine = BatchEngine::create(c, *weights, **pool, BatchEngine::workspace_sizes(c, 16, 3, 2, 64), &threads);
  ASSERT_TRUE(engine.ok());
  std::vector<std::vector<int32_t>> prompts = {{}, {}};
  for (int i = 0; i < 19; ++i) prompts[0].push_back((i * 37) % 299 + 1);
  for (int i = 0; i < 11; ++i) prompts[1].push_back((i * 53) % 299 + 1);
  BlockTable tables[2];
  for (auto& t : tables) t.blocks = {*(*pool)->allocate(), *(*pool)->allocate()};
  RowRecorder rec;
  int64_t done[2] = {0, 0};
  std::vector<std::vector<float>> last(2);
  while (done[0] < 19 || done[1] < 11) {
    std::vector<SeqStep> plan;
    rec.owners.clear();
    for (size_t s = 0; s < 2; ++s) {
      const int64_t len = static_cast<int64_t>(prompts[s].size());
      if (done[s] >= len) continue;
      const int64_t n = std::min<int64_t>(7, len - done[s]);
      plan.push_back({std::span(prompts[s]).subspan(static_cast<size_t>(done[s]), static_cast<size_t>(n)), done[s],
                      &tables[s], done[s] + n == len, /*want_all_logits=*/true});
      rec.owners.push_back(s);
    }
    auto logits = (*engine)->step(plan, &rec);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    size_t row = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
      done[rec.owners[i]] += static_cast<int64_t>(plan[i].tokens.size());
      if (!plan[i].want_logits) continue;
      auto l = logits->subspan(row++ * static_cast<size_t>(c.vocab_size), static_cast<size_t>(c.vocab_size));
      last[rec.owners[i]].assign(l.begin(), l.end());
    }
  }
  EXPECT_EQ(rec.rows.size(), 18u + 10u);  // every position but each prompt's last
  for (size_t s = 0; s < 2; ++s) {
    ReferenceKvCache cache(c, 64);
    std::vector<float> want(static_cast<size_t>(c.vocab_size));
    for (size_t p = 0; p < prompts[s].size(); ++p) {
      ref.forward(prompts[s][p], static_cast<int64_t>(p), cache, want.data());
      const bool is_last = p + 1 == prompts[s].size();
      auto it = rec.rows.find({s, static_cast<int64_t>(p)});
      ASSERT_EQ(it == rec.rows.end(), is_last) << s << " " << p;
      const std::vector<float>& got = is_last ? last[s] : it->second;
      for (size_t v = 0; v < want.size(); ++v) {
        ASSERT_NEAR(got[v], want[v], 1e-4f * std::max(1.0f, std::fabs(want[v]))) << s << " " << p << " " << v;
      }
    }
  }
}

// The engine owns its workspace formula; the plan takes these sizes as given.
TEST(BatchEngine, WorkspaceSizesScaleWithStepTokensAndHoldTheKernelsScratch) {
  ModelConfig c;
  c.dim = 64;
  c.n_layers = 5;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  c.ffn_dim = 172;
  c.vocab_size = 512;
  c.max_seq_len = 512;
  const auto a = BatchEngine::workspace_sizes(c, 256, 64, 2, 512);
  const auto b = BatchEngine::workspace_sizes(c, 512, 64, 2, 512);
  EXPECT_GT(b.total_bytes(), a.total_bytes());
  EXPECT_EQ(a.hidden_floats, 3 * 256 * 64);
  EXPECT_EQ(a.logits_floats, 64 * (512 + 64));
  EXPECT_EQ(a.matmul_scratch_bytes, kernels::matmul_scratch_bytes(172, 256, 2));
  EXPECT_EQ(BatchEngine::workspace_sizes(c, 8, 64, 1, 16).step_seqs, 8);  // B never above T
}

TEST(BatchEngine, RefusesPositionsPastLearnedOnes) {
  ModelConfig c = gpt2_config();
  c.max_seq_len = 8;
  testing::RandomDecoder model(c, 24, false);
  auto weights = bind_decoder_weights(c, model.tensors());
  ASSERT_TRUE(weights.ok()) << weights.error().message;
  auto pool = KvBlockPool::create(c, 4, 4);
  auto engine = BatchEngine::create(c, *weights, **pool, BatchEngine::workspace_sizes(c, 16, 2, 1, 16), nullptr);
  ASSERT_TRUE(engine.ok());
  BlockTable table;
  table.blocks = {*(*pool)->allocate(), *(*pool)->allocate(), *(*pool)->allocate()};
  std::vector<int32_t> tokens(9, 1);
  std::vector<SeqStep> plan = {{tokens, 0, &table, true}};
  auto r = (*engine)->step(plan);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("learned positions"), std::string::npos) << r.error().message;
}

TEST(BatchEngine, RefusesAStepLargerThanItsWorkspace) {
  const ModelConfig c = small_config();
  auto model = random_llama_in_memory(c, DType::kF32, 3);
  ASSERT_TRUE(model.ok());
  auto weights = bind_decoder_weights(c, model->tensors);
  auto pool = KvBlockPool::create(c, 8, 16);
  auto engine = BatchEngine::create(c, *weights, **pool, BatchEngine::workspace_sizes(c, 8, 2, 1, 128), nullptr);
  ASSERT_TRUE(engine.ok());
  BlockTable table;
  table.blocks = {*(*pool)->allocate()};
  std::vector<int32_t> tokens(9, 1);
  std::vector<SeqStep> plan = {{tokens, 0, &table, true}};
  EXPECT_FALSE((*engine)->step(plan).ok());
  std::vector<int32_t> bad = {400};
  plan = {{bad, 0, &table, true}};
  auto r = (*engine)->step(plan);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("400"), std::string::npos);
}

}  // namespace
}  // namespace plimsoll
