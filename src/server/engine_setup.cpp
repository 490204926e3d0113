// Engine set-up: load, budget, plan, allocate per plan, warm up.
#include "server/engine_setup.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/grammar/grammar_sources.h"
#include "kernels/kernels.h"
#include "memory/process_memory.h"
#include "memory/resident_model.h"
#include "server/serve.h"
#include "server/serve_plan.h"

namespace plimsoll {

Result<DType> kv_cache_dtype_from_name(const std::string& name) {
  const std::optional<DType> d = dtype_from_name(name);
  if (!d || (*d != DType::kF16 && *d != DType::kF32)) {
    return make_error(ErrorCode::kInvalidArgument, "KV cache dtype '" + name + "': use f16 or f32");
  }
  return *d;
}

Result<EngineSetup> load_engine_model(const EngineOptions& o) {
  PLIMSOLL_TRY(kernels::isa_env_status());  // a PLIMSOLL_ISA this CPU lacks: say so before loading
  EngineSetup s;
  PLIMSOLL_ASSIGN(s.model, load_model(o.model_path, weights_backing(o)));
  PLIMSOLL_ASSIGN(s.tokenizer, load_model_tokenizer(s.model, o.tokenizer_path));
  s.token_trie = std::make_shared<const TokenTrie>(TokenTrie::build(*s.tokenizer.tokenizer));
  spdlog::info("grammar: token trie of {} nodes, {} bytes", s.token_trie->num_nodes(), s.token_trie->bytes());
  // The free-form JSON automaton (json_object, untyped schemas) is compiled
  // once, here, so no request's preparation pays for it; it is resident from
  // now on and counted below with the rest of the process.
  PLIMSOLL_ASSIGN(const std::shared_ptr<const Grammar> any_json, grammar_any_json_object(GrammarLimits{}));
  spdlog::info("grammar: free-form JSON grammar of {} rules, {} bytes", any_json->num_rules(), any_json->bytes());
  PLIMSOLL_ASSIGN(s.weights, bind_decoder_weights(s.model.config, s.model.tensors));
  s.runtime_base_bytes = resident_bytes_besides_weights(s.model);
  return s;
}

Result<EngineSetup> setup_engine(const ServeConfig& settings) {
  PLIMSOLL_ASSIGN(EngineSetup s, load_engine_model(settings.engine));
  PLIMSOLL_TRY(plan_and_start_engine(settings, s));
  return s;
}

int64_t resident_bytes_besides_weights(const LoadedModel& model) {
  return std::max<int64_t>(0, read_process_memory().resident_bytes - model.tensors.resident_copy_bytes());
}

Status plan_and_start_engine(const ServeConfig& settings, EngineSetup& s) {
  const EngineOptions& o = settings.engine;
  PLIMSOLL_ASSIGN(s.budget, resolve_memory_budget(o.memory_limit_bytes, o.memory_fraction));

  ModelFacts facts;
  facts.config = s.model.config;
  facts.weights_bytes = s.model.tensors.total_bytes();
  // What the process held after loading (binary, libraries, tokenizer
  // tables, token trie), with room for thread stacks and allocator slack on top.
  facts.runtime_bytes = planned_runtime_bytes(s.runtime_base_bytes, 0);
  PLIMSOLL_ASSIGN(s.plan, plan_serve_memory(settings, facts, ThreadPool::hardware_threads(), s.budget.budget_bytes));

  s.threads = std::make_unique<ThreadPool>(static_cast<int>(s.plan.workspace.n_threads));
  PLIMSOLL_ASSIGN(s.pool, KvBlockPool::create(s.model.config, s.plan.kv_blocks, o.block_tokens, o.kv_dtype,
                                                    o.prefix_caching));
  PLIMSOLL_ASSIGN(s.engine, BatchEngine::create(s.model.config, std::move(*s.weights), *s.pool, s.plan.workspace,
                                                s.threads.get()));
  s.weights.reset();
  PLIMSOLL_TRY(s.engine->warm_up());
  return {};
}

}  // namespace plimsoll
