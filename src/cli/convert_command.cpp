// `plimsoll convert`: a model file (llama2.c or GGUF) to GGUF in another
// dtype, or a random-weight model of any Llama shape (--random).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "convert/gguf_export.h"
#include "convert/random_model.h"
#include "core/bytes.h"
#include "core/stop_signals.h"
#include "formats/model_file.h"
#include "kernels/kernels.h"

namespace plimsoll::cli {
namespace {

struct ConvertFlags {
  std::string input;
  std::string tokenizer;
  std::string output;
  std::string dtype = "f32";
  bool random = false;
  ModelConfig shape;  // for --random
  int64_t vocab_size = 0;
  std::string vocab_from;
  uint64_t seed = 1;
};

int fail(const std::string& message) {
  spdlog::error("{}", message);
  return 1;
}

// Sources that read (and dequantize) the tensors of a loaded model.
std::vector<ExportTensor> tensors_of(const LoadedModel& model) {
  std::vector<ExportTensor> out = llama_tensor_layout(model.config);
  for (ExportTensor& t : out) {
    const TensorView* view = model.tensors.find(t.name);
    t.source = [view, name = t.name](std::span<float> values) -> Status {
      if (!view) return make_error(ErrorCode::kNotFound, "missing tensor '" + name + "'");
      const int64_t cols = view->cols();
      for (int64_t r = 0; r < view->rows(); ++r) {
        kernels::dequantize_row(view->dtype, view->row(r), values.data() + r * cols, cols);
      }
      return {};
    };
  }
  return out;
}

Result<std::pair<ModelConfig, Vocab>> random_spec(const ConvertFlags& f) {
  ModelConfig c = f.shape;
  c.name = "random-llama";
  Vocab vocab;
  if (!f.vocab_from.empty()) {
    PLIMSOLL_ASSIGN(vocab, load_vocab(f.vocab_from, f.vocab_size));
  } else {
    if (f.vocab_size < 259) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--vocab-size must be at least 259 (3 specials + 256 byte tokens), or pass --vocab-from FILE");
    }
    vocab = synthetic_vocab(f.vocab_size);
  }
  c.vocab_size = vocab.size();
  if (c.n_kv_heads == 0) c.n_kv_heads = c.n_heads;
  if (c.dim <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.ffn_dim <= 0 || c.max_seq_len <= 0 ||
      c.dim % c.n_heads != 0 || c.n_heads % c.n_kv_heads != 0 || c.head_dim() % 2 != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--dim, --layers, --heads, --ffn and --context must be positive, --dim a "
                      "multiple of --heads with an even head size, and --heads a multiple of --kv-heads");
  }
  return std::make_pair(c, vocab);
}

int run_convert(const ConvertFlags& f) {
  // q4_k_m: llama.cpp's Q4_K_M mix (Q4_K, Q6_K where its llama_tensor_get_type puts it)
  const QuantMix mix = f.dtype == "q4_k_m" ? QuantMix::kQ4_K_M : QuantMix::kNone;
  const std::optional<DType> dtype = mix == QuantMix::kQ4_K_M ? DType::kQ4_K : dtype_from_name(f.dtype);
  if (dtype && dtype_traits(*dtype).read_only) {
    return fail("--dtype '" + f.dtype + "' is read only: ggml's quantizer for it needs an importance matrix");
  }
  if (!dtype || !dtype_is_writable(*dtype)) {
    return fail("--dtype '" + f.dtype + "' is not one of f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, iq4_xs, q2_k, q3_k, q4_k, q4_k_m, q5_k, q6_k");
  }
  catch_stop_signals();  // Ctrl-C / SIGTERM: the writer stops and removes its .tmp file
  const auto t0 = std::chrono::steady_clock::now();
  Result<ExportReport> report = make_error(ErrorCode::kInternal, "nothing done");
  ModelConfig config;
  if (f.random) {
    auto spec = random_spec(f);
    if (!spec) return fail(spec.error().message);
    config = spec->first;
    spdlog::info("writing a random llama model: {} parameters", llama_parameter_count(config));
    report = export_llama_gguf(f.output, config, spec->second, random_llama_tensors(config, f.seed), *dtype, mix);
  } else {
    if (f.input.empty()) return fail("give an input model file, or --random");
    auto model = load_model(f.input);
    if (!model) return fail(model.error().message);
    Vocab vocab;
    if (!f.tokenizer.empty()) {
      auto v = load_vocab(f.tokenizer, model->config.vocab_size);
      if (!v) return fail(v.error().message);
      vocab = std::move(v).value();
    } else if (model->vocab) {
      vocab = *model->vocab;
    } else {
      return fail(f.input + ": the file carries no vocabulary; pass --tokenizer FILE");
    }
    config = model->config;
    report = export_llama_gguf(f.output, config, vocab, tensors_of(*model), *dtype, mix);
  }
  if (!report) {
    fail(report.error().message);
    return stop_requested() ? stop_exit_code() : 1;
  }
  for (const std::string& fb : report->fallbacks) spdlog::info("{}", fb);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("wrote {}: {} tensors, {} of tensor data, {}, in {:.1f} s", f.output, report->n_tensors,
               format_bytes(report->total_bytes), mix == QuantMix::kQ4_K_M ? "q4_k_m" : std::string(dtype_name(*dtype)),
               s);
  return 0;
}

}  // namespace

Runner add_convert_command(CLI::App& app) {
  auto f = std::make_shared<ConvertFlags>();
  f->shape.max_seq_len = 2048;
  CLI::App* cmd = app.add_subcommand(
      "convert", "Write a model as GGUF in another dtype, or a random-weight model (--random)");
  cmd->add_option("input", f->input, "Input model (llama2.c checkpoint or GGUF)");
  cmd->add_option("--tokenizer", f->tokenizer, "llama2.c tokenizer.bin for a llama2.c input");
  cmd->add_option("-o,--output", f->output, "Output GGUF path (written atomically)")->required();
  cmd->add_option("--dtype", f->dtype,
                  "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, iq4_xs, q2_k, q3_k, q4_k, q4_k_m (llama.cpp's Q4_K_M "
                  "mix), q5_k or q6_k")
      ->capture_default_str();
  cmd->add_flag("--random", f->random, "Generate random weights of the shape given below");
  cmd->add_option("--dim", f->shape.dim, "--random: embedding width");
  cmd->add_option("--layers", f->shape.n_layers, "--random: transformer blocks");
  cmd->add_option("--heads", f->shape.n_heads, "--random: query heads");
  cmd->add_option("--kv-heads", f->shape.n_kv_heads, "--random: key/value heads (default: --heads)");
  cmd->add_option("--ffn", f->shape.ffn_dim, "--random: feed-forward width");
  cmd->add_option("--context", f->shape.max_seq_len, "--random: context length")->capture_default_str();
  cmd->add_option("--vocab-size", f->vocab_size, "--random: synthetic vocabulary size (>= 259)");
  cmd->add_option("--vocab-from", f->vocab_from, "--random: take the vocabulary from this GGUF or tokenizer.bin (with --vocab-size for a tokenizer.bin)");
  cmd->add_option("--seed", f->seed, "--random: weight seed")->capture_default_str();
  cmd->add_flag("--untied", [f](int64_t) { f->shape.tied_embeddings = false; },
                "--random: separate output head (default)");
  cmd->add_flag("--tied", [f](int64_t) { f->shape.tied_embeddings = true; },
                "--random: output head shares the token embedding");
  return [f] { return run_convert(*f); };
}

}  // namespace plimsoll::cli
