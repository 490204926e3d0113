// Records transformers.js' decode — PreTrainedTokenizer.decode(ids, {skip_special_tokens: true}),
// which is @huggingface/tokenizers' Tokenizer.decode with clean_up_tokenization_spaces taken
// from tokenizer_config.json (transformers.js passes null: the config's value, true when
// absent) — into tests/data/hf_tokenizer/cleanup.ref.jsonl, for texts where the clean-up
// changes something (" .", " ,", " n't", " 's", ...): corpus lines and a few written here.
// Each line: {"tokenizer", "text", "ids", "raw" (decode without clean-up), "decoded"}.
// --check compares instead of writing. The gpt2/llama3 configs set the option true,
// qwen2_5/llama2 false (their lines pin that nothing is cleaned).
import fs from "fs";
import path from "path";
import { Tokenizer } from "@huggingface/tokenizers";
import { dataDir, fullDir, readJsonl, smallDir } from "./tokenizer_sources.mjs";

const check = process.argv.includes("--check");
const kCorpusLines = 8;  // corpus lines per tokenizer whose decode the clean-up changes
const written = [
  "Hello , world ! I 'm here . Isn 't it ?",
  "They 've said ' yes ' and we 're fine .",
  "He said: \"it 's done , isn 't it ?\" and left .",
  "a  . b ' ' c",
  "x ' s and don 't , won 't .",
];
const tokenizers = [
  ["gpt2-small", smallDir("gpt2")], ["llama3-small", smallDir("llama3")],
  ["qwen2_5-small", smallDir("qwen2_5")], ["llama2-small", smallDir("llama2")],
  ["gpt2", fullDir("gpt2")], ["llama3", fullDir("llama3")],
];
const corpus = readJsonl(`${dataDir}/corpus.jsonl`);
const cleanable = / [.?!,]| ' | n't| 'm| 's| 've| 're/;

const lines = [];
for (const [name, dir] of tokenizers) {
  if (!fs.existsSync(path.join(dir, "tokenizer.json"))) throw Error(`${dir}: run npm ci first`);
  const json = JSON.parse(fs.readFileSync(`${dir}/tokenizer.json`, "utf8"));
  const config = JSON.parse(fs.readFileSync(`${dir}/tokenizer_config.json`, "utf8"));
  const tokenizer = new Tokenizer(json, config);
  const record = (text) => {
    const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
    const raw = tokenizer.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false });
    const decoded = tokenizer.decode(ids, { skip_special_tokens: true });  // as transformers.js: the config's flag
    lines.push(JSON.stringify({ tokenizer: name, text, ids, raw, decoded }));
  };
  let taken = 0;
  for (const text of corpus) {
    if (taken === kCorpusLines) break;
    if (text.length === 0 || !cleanable.test(text)) continue;
    record(text);
    taken++;
  }
  written.forEach(record);
}
const file = `${dataDir}/cleanup.ref.jsonl`;
const text = lines.join("\n") + "\n";
if (check) {
  const same = fs.existsSync(file) && fs.readFileSync(file, "utf8") === text;
  console.log(`cleanup: ${same ? "matches" : "DIFFERS from"} ${file}`);
  process.exit(same ? 0 : 1);
}
fs.writeFileSync(file, text);
console.log(`cleanup: ${lines.length} lines -> ${file}`);
