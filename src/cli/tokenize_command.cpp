// `plimsoll tokenize`: the token ids (and pieces) a prompt encodes to. A
// tokenizer alone is enough: --tokenizer FILE without -m, or -m naming a
// tokenizer.json or a vocabulary-only GGUF; with a model, its tokenizer.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/model_loading.h"
#include "cli/model_reference.h"

namespace plimsoll::cli {
namespace {

struct TokenizeFlags {
  std::string model;
  HubFlags hub;
  std::string tokenizer;
  std::string prompt;
  bool pieces = false;
  bool no_bos = false;
};

// The tokenizer the flags name (-m resolved), with no model where none is needed.
Result<ModelTokenizer> tokenizer_for(TokenizeFlags& f) {
  if (f.model.empty()) {
    if (f.tokenizer.empty()) {
      return make_error(ErrorCode::kInvalidArgument, "give -m MODEL or --tokenizer FILE (or both)");
    }
    return load_tokenizer_alone(f.tokenizer);
  }
  if (f.tokenizer.empty() && is_tokenizer_file(f.model)) return load_tokenizer_alone(f.model);
  PLIMSOLL_ASSIGN(ModelAndTokenizer loaded, load_model_and_tokenizer(f.model, f.tokenizer));
  return std::move(loaded.tokenizer);
}

int run_tokenize(TokenizeFlags& f) {
  if (!f.model.empty() && !resolve_model_in_place(f.model, f.hub)) return 1;
  auto loaded = tokenizer_for(f);
  if (!loaded) {
    spdlog::error("{}", loaded.error().message);
    return 1;
  }
  const TextTokenizer& tok = *loaded->tokenizer;
  const std::vector<int32_t> ids = tok.encode(f.prompt, !f.no_bos && tok.add_special_by_default());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (f.pieces) {
      std::printf("%d\t%s\n", ids[i], std::string(tok.token(ids[i])).c_str());
    } else {
      std::printf(i ? " %d" : "%d", ids[i]);
    }
  }
  if (!f.pieces) std::printf("\n");
  return 0;
}

}  // namespace

Runner add_tokenize_command(CLI::App& app) {
  auto f = std::make_shared<TokenizeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize",
      "Print the token ids of a prompt. A tokenizer alone will do: --tokenizer FILE without -m, or -m naming a "
      "tokenizer.json or a vocabulary-only GGUF");
  cmd->add_option("-m,--model", f->model,
                  std::string(kModelHelp) + "; or a tokenizer.json or vocabulary-only GGUF (no model loaded)");
  add_hub_flags(*cmd, f->hub);
  cmd->add_option("--tokenizer", f->tokenizer,
                  "Tokenizer instead of the model's, or with no -m the only one read: tokenizer.json, GGUF "
                  "(vocabulary-only or a model's), or llama2.c tokenizer.bin");
  cmd->add_option("-p,--prompt", f->prompt, "Text to encode");
  cmd->add_flag("--pieces", f->pieces, "One token a line: id and piece");
  cmd->add_flag("--no-bos", f->no_bos, "Do not add BOS (or the tokenizer's other special tokens)");
  return [f] { return run_tokenize(*f); };
}

}  // namespace plimsoll::cli
