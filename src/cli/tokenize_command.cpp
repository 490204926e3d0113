// `plimsoll tokenize`: the token ids (and pieces) a prompt encodes to.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

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

int run_tokenize(TokenizeFlags& f) {
  if (!resolve_model_in_place(f.model, f.hub)) return 1;
  auto loaded = load_model_and_tokenizer(f.model, f.tokenizer);
  if (!loaded) {
    std::fprintf(stderr, "error: %s\n", loaded.error().message.c_str());
    return 1;
  }
  const TextTokenizer& tok = *loaded->tokenizer.tokenizer;
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
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a prompt");
  cmd->add_option("-m,--model", f->model, kModelHelp)->required();
  add_hub_flags(*cmd, f->hub);
  cmd->add_option("--tokenizer", f->tokenizer, "Tokenizer instead of the model's: tokenizer.json, GGUF, or llama2.c tokenizer.bin");
  cmd->add_option("-p,--prompt", f->prompt, "Text to encode");
  cmd->add_flag("--pieces", f->pieces, "One token a line: id and piece");
  cmd->add_flag("--no-bos", f->no_bos, "Do not add BOS");
  return [f] { return run_tokenize(*f); };
}

}  // namespace plimsoll::cli
