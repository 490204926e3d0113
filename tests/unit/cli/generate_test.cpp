// `plimsoll generate` end to end on the real stories260K model: byte-for-byte
// equal to llama2.c's reference output, from the llama2.c file, llama.cpp's
// GGUF and our own GGUF conversion; prompts as llama2.c continues them.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "run_command.h"
#include "test_paths.h"

namespace plimsoll {
namespace {

using testing::plimsoll_binary;
using testing::read_file;
using testing::run_command;
using testing::stories_path;

std::string generate(const std::string& args) {
  auto r = run_command(plimsoll_binary() + " generate " + args + " 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << args;
  return r.out;
}

const std::string kBin = "--model " + stories_path("stories260K.bin") + " --tokenizer " + stories_path("tok512.bin");

TEST(Generate, Llama2cCheckpointMatchesReferenceByteForByte) {
  // llama2.c's -n 256 runs 256 positions from BOS and prints 256 sampled tokens.
  EXPECT_EQ(generate(kBin + " --max-new-tokens 256 --temperature 0"),
            read_file(stories_path("greedy_from_bos_256_steps.txt")));
}

TEST(Generate, LlamaCppGgufMatchesReferenceByteForByte) {
  EXPECT_EQ(generate("--model " + stories_path("stories260K.gguf") + " -n 256"),
            read_file(stories_path("greedy_from_bos_256_steps.txt")));
}

TEST(Generate, OurF32ConversionMatchesReferenceByteForByte) {
  const std::string out = testing::make_temp_dir() + "/f32.gguf";
  auto r = run_command(plimsoll_binary() + " convert " + stories_path("stories260K.bin") + " --tokenizer " +
                       stories_path("tok512.bin") + " --dtype f32 -o " + out + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(generate("--model " + out + " -n 256"), read_file(stories_path("greedy_from_bos_256_steps.txt")));
}

// `plimsoll convert --random --dtype <type>` for the types past Q4_0 (bench/models.sh's way of
// making models): the file loads and generates, greedy, the number of tokens asked for.
TEST(Generate, RandomModelsInEachNewQuantTypeLoadAndGenerate) {
  const std::string dir = testing::make_temp_dir();
  for (const char* dtype : {"q4_1", "q5_0", "q5_1", "iq4_nl", "iq4_xs", "q3_k", "q2_k"}) {
    const std::string out = dir + "/" + dtype + ".gguf";
    auto r = run_command(plimsoll_binary() + " convert --random --dim 256 --layers 2 --heads 4 --kv-heads 2 --ffn 512 " +
                         "--vocab-size 512 --context 64 --dtype " + dtype + " -o " + out + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << dtype << ": " << r.out;
    auto g = run_command(plimsoll_binary() + " generate --model " + out +
                         " -p 'Once upon a time' -n 12 --temperature 0 --ignore-eos 2>&1");
    EXPECT_EQ(g.exit_code, 0) << dtype << ": " << g.out;
    EXPECT_FALSE(g.out.empty()) << dtype;
  }
}

// The grid i-quants are read only: convert refuses them as a target and says why.
TEST(Generate, ConvertRefusesReadOnlyIQuants) {
  const std::string out = testing::make_temp_dir() + "/iq.gguf";
  for (const char* dtype : {"iq2_xxs", "iq1_m"}) {
    auto r = run_command(plimsoll_binary() + " convert --random --dim 256 --layers 1 --heads 4 --ffn 256 " +
                         "--vocab-size 512 --context 16 --dtype " + dtype + " -o " + out + " 2>&1");
    EXPECT_NE(r.exit_code, 0) << dtype;
    EXPECT_NE(r.out.find(std::string("--dtype '") + dtype + "' is read only"), std::string::npos) << r.out;
  }
}

// tests/data/llama2c_reference_prompts.txt: what llama2.c's run.c prints for prompts.
struct PromptCase {
  std::string prompt;
  int steps = 0;
  std::string text;
};

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      out += s[i + 1] == 'n' ? '\n' : s[i + 1];
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<PromptCase> load_cases() {
  std::ifstream in(testing::source_dir() + "/tests/data/llama2c_reference_prompts.txt");
  std::vector<PromptCase> cases;
  std::string line;
  PromptCase c;
  while (std::getline(in, line)) {
    if (line.rfind("prompt: ", 0) == 0) c.prompt = unescape(line.substr(8));
    if (line.rfind("steps: ", 0) == 0) c.steps = std::stoi(line.substr(7));
    if (line.rfind("text: ", 0) == 0) {
      c.text = unescape(line.substr(6));
      cases.push_back(c);
    }
  }
  return cases;
}

TEST(Generate, PromptsContinueAsLlama2cDoes) {
  const auto cases = load_cases();
  ASSERT_GE(cases.size(), 3u);
  for (const PromptCase& c : cases) {
    // run.c's steps count positions: BOS + prompt tokens + generated, and it prints
    // every sampled token; ask for the tokens after the prompt.
    const auto ids = run_command(plimsoll_binary() + " tokenize " + kBin + " --prompt '" + c.prompt + "' 2>/dev/null");
    ASSERT_EQ(ids.exit_code, 0);
    std::istringstream ss(ids.out);
    int n_prompt = 0;
    for (std::string tok; ss >> tok;) ++n_prompt;  // BOS included
    const int n_new = c.steps - n_prompt + 1;
    EXPECT_EQ(generate(kBin + " --prompt '" + c.prompt + "' -n " + std::to_string(n_new)), c.text + "\n")
        << "prompt: " << c.prompt;
  }
}

TEST(Generate, BadModelFileEndsWithOneLineErrorNamingTheFile) {
  const std::string dir = testing::make_temp_dir();
  std::ofstream(dir + "/bad.gguf") << "GGUF\x03\x00\x00\x00garbage";
  auto r = run_command(plimsoll_binary() + " generate --model " + dir + "/bad.gguf 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(dir + "/bad.gguf"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

}  // namespace
}  // namespace plimsoll
