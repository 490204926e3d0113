// The table of tokenizer.ggml.pre names. Each kind is written as the
// pre_tokenizer of the tokenizer.json llama.cpp's converter read it from (the
// Split patterns of those files, in PCRE2 syntax), since Hugging Face
// tokenizers' ids on those files are the reference (llama.cpp's test vectors).
// The names and which kind each is follow llama.cpp's src/llama-vocab.cpp.
#include "tokenizer/gguf_pre_tokenizers.h"

#include <array>
#include <functional>

namespace plimsoll {
namespace {

using hf::Json;

// --- the Split patterns -----------------------------------------------------

// Llama 3 (and DBRX, Smaug): tiktoken's cl100k pattern.
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|)"
    R"(\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2 / Qwen2.5 / Qwen3: cl100k with single digits.
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|)"
    R"(\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen3.5: marks (\p{M}) stay with their letters.
constexpr const char* kQwen35Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|)"
    R"(\s*[\r\n]+|\s+(?!\S)|\s+)";
// Mistral's Tekken (Nemo, Ministral, Pixtral-style): o200k-like, single digits.
constexpr const char* kTekkenPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|)"
    R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-4o: tiktoken's o200k pattern.
constexpr const char* kGpt4oPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// BLOOM: a word and the space before it, up to whitespace or sentence punctuation
// (tokenizer.json's Oniguruma class " ?[^(\s|[.,!?…。，、।۔،])]+", flattened).
constexpr const char* kBloomPattern = R"( ?[^(\s|.,!?…。，、।۔،)]+)";
// GPT-2's own pattern without its last alternative, as llama.cpp splits it
// (what is left unmatched stays a piece of its own).
constexpr const char* kGpt2Words = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
// Runs of punctuation, ASCII punctuation included (Hugging Face's Punctuation
// pre-tokenizer, "contiguous").
constexpr const char* kPunctuationRun = R"([\p{P}$+<=>^`|~]+)";

// DeepSeek LLM (deepseek-llm-7b): letters of cased scripts, ASCII/fullwidth
// punctuation, trailing whitespace, CJK and Hangul, then digits.
constexpr const char* kDeepseekLetters =
    "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF"
    "\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5"
    "\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA"
    "\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45"
    "\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE"
    "\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC"
    "\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139"
    "\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3"
    "\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06"
    "\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3"
    "\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF"
    "\U0001E900-\U0001E943]+";
constexpr const char* kDeepseekPunctuation = "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+";
constexpr const char* kCjkHangul = "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+";

// --- tokenizer.json pieces --------------------------------------------------

Json split(const char* pattern) {
  return {{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}};
}
Json byte_level(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}
Json digits(bool individual) { return {{"type", "Digits"}, {"individual_digits", individual}}; }
Json sequence(std::initializer_list<Json> parts) {
  Json list = Json::array();
  for (const Json& part : parts) list.push_back(part);
  return {{"type", "Sequence"}, {"pretokenizers", std::move(list)}};
}
Json nfc() { return {{"type", "NFC"}}; }

GgufPreTokenizer pre(Json pre_tokenizer, Json normalizer = nullptr) {
  GgufPreTokenizer p;
  p.pre_tokenizer = std::move(pre_tokenizer);
  p.normalizer = std::move(normalizer);
  return p;
}

// One pattern, then bytes to GPT-2's alphabet.
GgufPreTokenizer split_bytes(const char* pattern, Json normalizer = nullptr) {
  return pre(sequence({split(pattern), byte_level(false)}), std::move(normalizer));
}

GgufPreTokenizer llama3(bool ignore_merges_and_bos) {
  GgufPreTokenizer p = split_bytes(kLlama3Pattern);
  p.ignore_merges = ignore_merges_and_bos;
  p.add_bos = ignore_merges_and_bos;
  return p;
}

GgufPreTokenizer tekken() {
  GgufPreTokenizer p = split_bytes(kTekkenPattern);
  p.ignore_merges = true;
  p.add_bos = true;
  return p;
}

// llama.cpp's regexes for a file without a name (older converters).
GgufPreTokenizer unnamed() {
  return pre(sequence({split(R"([\p{P}$+<=>^~|]+)"), split(kGpt2Words), split(R"(\p{N}+)"),
                       split("[0-9][0-9][0-9]"), byte_level(false)}));
}

struct Kind {
  std::vector<std::string_view> names;
  std::function<GgufPreTokenizer()> make;
};

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> table = {
      {{"default"}, unnamed},
      // GPT-2's ByteLevel (gpt2: the name earlier Plimsoll files carry).
      {{"gpt-2", "gpt2", "phi-2"}, [] { return pre(byte_level(true)); }},
      // GPT-NeoX's tokenizer (MPT, OLMo): NFC, then ByteLevel.
      {{"mpt", "olmo"}, [] { return pre(byte_level(true), nfc()); }},
      {{"llama-bpe", "llama3", "llama-v3", "falcon3", "pixtral"}, [] { return llama3(true); }},
      {{"dbrx", "smaug-bpe"}, [] { return llama3(false); }},
      {{"qwen2", "deepseek-r1-qwen"}, [] { return split_bytes(kQwen2Pattern, nfc()); }},
      {{"qwen35"}, [] { return split_bytes(kQwen35Pattern, nfc()); }},
      {{"tekken"}, tekken},
      {{"gpt-4o"}, [] { return split_bytes(kGpt4oPattern); }},
      {{"bloom", "poro-chat", "gpt3-finnish"}, [] { return split_bytes(kBloomPattern); }},
      // Falcon: punctuation runs, GPT-2's ByteLevel, digit runs, then threes.
      {{"falcon"},
       [] {
         return pre(sequence({split(kPunctuationRun), byte_level(true), digits(false), split("[0-9][0-9][0-9]")}));
       }},
      // StarCoder's tokenizer and those built like it: single digits, then ByteLevel.
      {{"starcoder", "refact", "smollm"}, [] { return pre(sequence({digits(true), byte_level(true)})); }},
      {{"command-r"}, [] { return pre(sequence({digits(true), byte_level(true)}), nfc()); }},
      {{"deepseek-llm"},
       [] {
         return pre(sequence({split(R"([\r\n])"), split(kDeepseekLetters), split(kDeepseekPunctuation),
                              split(R"(\s+$)"), split(kCjkHangul), digits(false), byte_level(false)}));
       }},
      {{"deepseek-coder"},
       [] {
         return pre(sequence({split(R"([\r\n])"), split(R"(\s?\p{L}+)"), split(R"(\s?\p{P}+)"), split(kCjkHangul),
                              digits(true), byte_level(false)}));
       }},
  };
  return table;
}

}  // namespace

std::vector<std::string> gguf_pre_tokenizer_names() {
  std::vector<std::string> names;
  for (const Kind& kind : kinds()) names.insert(names.end(), kind.names.begin(), kind.names.end());
  return names;
}

Result<GgufPreTokenizer> gguf_pre_tokenizer(std::string_view name, const std::string& file_name) {
  const std::string_view wanted = name.empty() ? "default" : name;
  for (const Kind& kind : kinds()) {
    for (const std::string_view known : kind.names) {
      if (known == wanted) return kind.make();
    }
  }
  std::string known;
  for (const std::string& n : gguf_pre_tokenizer_names()) known += (known.empty() ? "" : ", ") + n;
  return make_error(ErrorCode::kUnsupported, file_name + ": tokenizer.ggml.pre '" + std::string(name) +
                                                 "' is not supported (known: " + known + ")");
}

}  // namespace plimsoll
