// `plimsoll inspect FILE`: what a model file holds: format, hyper-parameters,
// tensors (dtype, shape, bytes), vocabulary summary, GGUF metadata.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <memory>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/model_reference.h"
#include "core/bytes.h"
#include "formats/gguf.h"
#include "formats/model_file.h"

namespace plimsoll::cli {
namespace {

struct InspectFlags {
  std::string path;
  bool all_tensors = false;
  HubFlags hub;
};

struct ValueSummary {
  std::string operator()(const std::string& s) const {
    return "\"" + (s.size() > 60 ? s.substr(0, 60) + "..." : s) + "\"";
  }
  std::string operator()(const GgufArray& a) const {
    return "[" + std::string(gguf_type_name(a.elem_type())) + " x " + std::to_string(a.size()) + "]";
  }
  std::string operator()(bool b) const { return b ? "true" : "false"; }
  template <typename T>
  std::string operator()(T number) const { return std::to_string(number); }
};

std::string value_summary(const GgufValue& v) { return std::visit(ValueSummary{}, v); }

void print_config(const LoadedModel& m) {
  const ModelConfig& c = m.config;
  std::printf("format: %s\narchitecture: %s\nname: %s\n", m.format == ModelFormat::kGguf ? "GGUF" : m.format == ModelFormat::kHfSafetensors ? "Hugging Face safetensors" : "llama2.c",
              c.arch.c_str(), c.name.c_str());
  std::printf("dim %lld, layers %lld, heads %lld, kv heads %lld, head dim %lld, ffn %lld, vocab %lld, "
              "context %lld\nrms eps %g, rope theta %g (%s), output head %s\n",
              static_cast<long long>(c.dim), static_cast<long long>(c.n_layers),
              static_cast<long long>(c.n_heads), static_cast<long long>(c.n_kv_heads),
              static_cast<long long>(c.head_dim()), static_cast<long long>(c.ffn_dim),
              static_cast<long long>(c.vocab_size), static_cast<long long>(c.max_seq_len),
              static_cast<double>(c.norm_eps), static_cast<double>(c.rope_theta),
              c.rope_layout == RopeLayout::kInterleaved ? "interleaved pairs" : "half split",
              c.tied_embeddings ? "tied to token_embd" : "separate");
}

void print_tensors(const LoadedModel& m, bool all) {
  std::map<std::string, std::pair<int64_t, int64_t>> by_dtype;  // dtype -> count, bytes
  int64_t params = 0;
  std::printf("\ntensors: %zu, %s\n", m.tensors.tensors().size(), format_bytes(m.tensors.total_bytes()).c_str());
  size_t shown = 0;
  for (const TensorView& t : m.tensors.tensors()) {
    auto& [count, bytes] = by_dtype[std::string(dtype_name(t.dtype))];
    ++count;
    bytes += t.n_bytes;
    params += t.n_elems();
    const bool is_block = t.name.rfind("blk.", 0) == 0 && t.name.rfind("blk.0.", 0) != 0;
    if (all || !is_block) {
      std::printf("  %-28s %-5s %-14s %s\n", t.name.c_str(), std::string(dtype_name(t.dtype)).c_str(),
                  shape_to_string(t.shape).c_str(), format_bytes(t.n_bytes).c_str());
      ++shown;
    }
  }
  if (shown < m.tensors.tensors().size()) {
    std::printf("  ... blocks 1..%lld have the same tensors as blk.0 (--all to list them)\n",
                static_cast<long long>(m.config.n_layers - 1));
  }
  std::printf("parameters: %lld\n", static_cast<long long>(params));
  for (const auto& [name, cb] : by_dtype) {
    std::printf("  %-5s %lld tensors, %s\n", name.c_str(), static_cast<long long>(cb.first),
                format_bytes(cb.second).c_str());
  }
}

void print_vocab(const Vocab& v) {
  std::printf("\nvocabulary: %lld tokens, model \"%s\", bos %d, eos %d, unk %d, add_bos %s\n",
              static_cast<long long>(v.size()), v.model.c_str(), v.bos_id, v.eos_id, v.unk_id,
              v.add_bos ? "true" : "false");
  std::printf("  first pieces:");
  for (int64_t i = 0; i < std::min<int64_t>(v.size(), 8); ++i) std::printf(" %s", v.pieces[static_cast<size_t>(i)].c_str());
  std::printf("\n");
}

int run_inspect(InspectFlags& f) {
  if (!resolve_model_in_place(f.path, f.hub)) return 1;
  auto model = load_model(f.path);
  if (!model) {
    spdlog::error("{}", model.error().message);
    return 1;
  }
  print_config(*model);
  print_tensors(*model, f.all_tensors);
  if (model->vocab) print_vocab(*model->vocab);
  if (model->format == ModelFormat::kGguf) {
    auto file = MappedFile::open(f.path);
    if (file) {
      auto gguf = parse_gguf(**file);
      if (gguf) {
        std::printf("\nGGUF v%u metadata (%zu keys):\n", gguf->version, gguf->metadata.size());
        for (const GgufKv& kv : gguf->metadata) {
          std::printf("  %-42s %s\n", kv.key.c_str(), value_summary(kv.value).c_str());
        }
      }
    }
  }
  return 0;
}

}  // namespace

Runner add_inspect_command(CLI::App& app) {
  auto f = std::make_shared<InspectFlags>();
  CLI::App* cmd = app.add_subcommand("inspect", "Show a model's hyper-parameters, tensors and vocabulary");
  cmd->add_option("file,-m,--model", f->path, kModelHelp)->required();
  add_hub_flags(*cmd, f->hub);
  cmd->add_flag("--all", f->all_tensors, "List every tensor");
  return [f] { return run_inspect(*f); };
}

}  // namespace plimsoll::cli
