// The step path makes no heap allocation: operator new is counted while
// BatchEngine::step runs (after warm-up), on every thread (heap_counter.h).
#include <gtest/gtest.h>

#include "heap_counter.h"

#include "convert/random_model.h"
#include "engine/batch_engine.h"

namespace plimsoll {
namespace {

TEST(StepAllocation, NoHeapAllocationDuringSteps) {
  ModelConfig c;
  c.dim = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.ffn_dim = 128;
  c.vocab_size = 300;
  c.max_seq_len = 128;
  for (DType dtype : {DType::kF32, DType::kQ8_0, DType::kQ4_0}) {
    auto model = random_llama_in_memory(c, dtype, 9);
    ASSERT_TRUE(model.ok());
    auto weights = bind_decoder_weights(c, model->tensors);
    ASSERT_TRUE(weights.ok());
    auto pool = KvBlockPool::create(c, 64, 16);
    ASSERT_TRUE(pool.ok());
    ThreadPool threads(2);
    auto engine = BatchEngine::create(c, *weights, **pool, BatchEngine::workspace_sizes(c, 64, 8, 2, 128), &threads);
    ASSERT_TRUE(engine.ok());
    ASSERT_TRUE((*engine)->warm_up().ok());
    // 8 sequences: prefill chunks then decode steps, plans built before counting
    std::vector<BlockTable> tables(8);
    std::vector<std::vector<int32_t>> tokens(8, std::vector<int32_t>(40, 7));
    for (auto& t : tables) {
      for (int b = 0; b < 3; ++b) t.blocks.push_back(*(*pool)->allocate());
    }
    std::vector<SeqStep> prefill, decode;
    for (int s = 0; s < 8; ++s) prefill.push_back({std::span(tokens[s]).first(8), 0, &tables[s], true});
    for (int s = 0; s < 8; ++s) decode.push_back({std::span(tokens[s]).subspan(8, 1), 8, &tables[s], true});
    heap_counter::allocations = 0;
    heap_counter::counting = true;
    const bool ok1 = (*engine)->step(prefill).ok();
    const bool ok2 = (*engine)->step(decode).ok();
    heap_counter::counting = false;
    EXPECT_TRUE(ok1 && ok2);
    EXPECT_EQ(heap_counter::allocations.load(), 0) << "heap allocations during steps, dtype " << dtype_name(dtype);
  }
}

}  // namespace
}  // namespace plimsoll
