// bench/llama_cpp_steps: llama.cpp's greedy choice and top-5 log-probabilities at each step of
// given token sequences (teacher forcing), for bench/quant_agreement --llama-steps. A client of
// llama.cpp's public C API (include/llama.h), not part of the build: compile it against a llama.cpp
// build of your own (docs/quantization.md), e.g.
//   g++ -O2 -std=c++17 bench/llama_cpp_steps.cpp -I$L/include -I$L/ggml/include \
//     $L/build/src/libllama.a $L/build/ggml/src/libggml.a $L/build/ggml/src/libggml-cpu.a \
//     $L/build/ggml/src/libggml-base.a -fopenmp -lpthread -o /tmp/llama_cpp_steps
// (add -Wl,--unresolved-symbols=ignore-all against a build cut to the llama architecture)
// Usage: llama_cpp_steps MODEL THREADS < requests > answers
// Each request line: PROMPT_LEN N id id ... (PROMPT_LEN + N ids): the prompt, then the N tokens
// after it. Answer line per request: N steps "argmax:id=logprob,id=logprob,..." (top 5), the step
// i on the prompt plus the first i of the N tokens. The prompt is decoded as one batch, then one
// token per step, as a server with its prompt cache decodes a generation. f32 KV, flash attention
// off (as bench/llama_cpp_oracle runs llama-server).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: llama_cpp_steps MODEL THREADS < requests\n");
    return 2;
  }
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return 1;
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.n_threads = cp.n_threads_batch = std::atoi(argv[2]);
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) return 1;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    int n_prompt = 0, n = 0;
    in >> n_prompt >> n;
    std::vector<llama_token> ids(n_prompt + n);
    for (auto& t : ids) in >> t;
    llama_memory_clear(llama_get_memory(ctx), true);
    std::string out;
    for (int i = 0; i < n; ++i) {
      llama_batch b = i == 0 ? llama_batch_get_one(ids.data(), n_prompt)
                             : llama_batch_get_one(ids.data() + n_prompt + i - 1, 1);
      if (llama_decode(ctx, b) != 0) return 1;
      const float* logits = llama_get_logits_ith(ctx, -1);
      double mx = logits[0];
      for (int v = 1; v < n_vocab; ++v) mx = std::max<double>(mx, logits[v]);
      double sum = 0;
      for (int v = 0; v < n_vocab; ++v) sum += std::exp(logits[v] - mx);
      const double lse = mx + std::log(sum);
      std::vector<int> top(n_vocab);
      for (int v = 0; v < n_vocab; ++v) top[v] = v;
      std::partial_sort(top.begin(), top.begin() + 5, top.end(),
                        [&](int a, int c) { return logits[a] > logits[c] || (logits[a] == logits[c] && a < c); });
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%d:", i ? " " : "", top[0]);
      out += buf;
      for (int k = 0; k < 5; ++k) {
        std::snprintf(buf, sizeof buf, "%s%d=%.6f", k ? "," : "", top[k], logits[top[k]] - lse);
        out += buf;
      }
    }
    std::cout << out << std::endl;
  }
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
