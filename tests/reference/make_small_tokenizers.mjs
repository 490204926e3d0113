// Cuts small tokenizer.json files (committed under tests/data/hf_tokenizer/
// <name>-small/) from the real ones: same normalizer, pre-tokenizer, decoder,
// post-processor and added tokens; the base alphabet plus the first merges.
import fs from "fs";
import { fullTokenizers, fullDir, smallDir, dataDir, readJsonl } from "./tokenizer_sources.mjs";

const kMerges = 6000;

const splitMerge = (m, vocab) => {
  if (Array.isArray(m)) return m;
  for (let i = m.indexOf(" "); i >= 0; i = m.indexOf(" ", i + 1)) {
    const a = m.slice(0, i), b = m.slice(i + 1);
    if (a in vocab && b in vocab) return [a, b];
  }
  throw new Error(`bad merge ${m}`);
};

// Single-character tokens the small vocab starts from.
function baseTokens(json, corpusChars) {
  const vocab = json.model.vocab;
  const base = new Set();
  const byteFallback = json.model.byte_fallback;
  for (const token of Object.keys(vocab)) {
    const chars = [...token];
    if (/^<0x[0-9A-F]{2}>$/.test(token)) base.add(token);
    else if (chars.length === 1 && (!byteFallback || corpusChars.has(token) || token === "\u2581")) base.add(token);
  }
  if (json.model.unk_token) base.add(json.model.unk_token);
  return base;
}

function cut(name) {
  const json = JSON.parse(fs.readFileSync(`${fullDir(name)}/tokenizer.json`, "utf8"));
  const config = JSON.parse(fs.readFileSync(`${fullDir(name)}/tokenizer_config.json`, "utf8"));
  const corpusChars = new Set(readJsonl(`${dataDir}/corpus.jsonl`).flatMap((l) => [...l.normalize("NFC")]));
  const vocab = json.model.vocab;
  const kept = baseTokens(json, corpusChars);
  const merges = [];
  for (const m of json.model.merges) {
    if (merges.length >= kMerges) break;
    const [a, b] = splitMerge(m, vocab);
    if (kept.has(a) && kept.has(b)) {
      merges.push(Array.isArray(m) ? m : `${a} ${b}`);
      kept.add(a + b);
    }
  }
  for (const t of json.added_tokens) kept.add(t.content);
  // New ids: kept tokens in their original order.
  const order = [...kept].filter((t) => t in vocab || json.added_tokens.some((a) => a.content === t));
  const oldId = (t) => vocab[t] ?? json.added_tokens.find((a) => a.content === t).id;
  order.sort((x, y) => oldId(x) - oldId(y));
  const remap = new Map(order.map((t, i) => [oldId(t), i]));
  const newVocab = {};
  for (const t of order) if (t in vocab) newVocab[t] = remap.get(vocab[t]);
  json.model.vocab = newVocab;
  json.model.merges = merges;
  json.added_tokens = json.added_tokens.map((a) => ({ ...a, id: remap.get(a.id) }));
  const pp = json.post_processor;
  if (pp && pp.special_tokens) {
    for (const st of Object.values(pp.special_tokens)) st.ids = st.ids.map((i) => remap.get(i));
  }
  const smallConfig = {};
  for (const k of ["bos_token", "eos_token", "unk_token", "pad_token", "add_bos_token", "add_eos_token",
                   "clean_up_tokenization_spaces", "tokenizer_class"]) {
    if (k in config) smallConfig[k] = config[k];
  }
  fs.mkdirSync(smallDir(name), { recursive: true });
  fs.writeFileSync(`${smallDir(name)}/tokenizer.json`, JSON.stringify(json));
  fs.writeFileSync(`${smallDir(name)}/tokenizer_config.json`, JSON.stringify(smallConfig, null, 2) + "\n");
  console.log(`${name}-small: ${Object.keys(newVocab).length} tokens, ${merges.length} merges`);
}

for (const name of Object.keys(fullTokenizers)) cut(name);

// Variants of the structures other conversions use, on the same small vocabularies.
function variant(name, from, edit) {
  const json = JSON.parse(fs.readFileSync(`${smallDir(from)}/tokenizer.json`, "utf8"));
  const config = fs.readFileSync(`${smallDir(from)}/tokenizer_config.json`, "utf8");
  edit(json);
  fs.mkdirSync(`${dataDir}/${name}`, { recursive: true });
  fs.writeFileSync(`${dataDir}/${name}/tokenizer.json`, JSON.stringify(json));
  fs.writeFileSync(`${dataDir}/${name}/tokenizer_config.json`, config);
  console.log(`${name}: from ${from}-small`);
}
// Llama-2 / Mistral v0.3 "legacy: false" conversions: Metaspace instead of Prepend+Replace.
variant("metaspace-small", "llama2", (json) => {
  json.normalizer = null;
  json.pre_tokenizer = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false };
  json.decoder = { type: "Sequence", decoders: [
    { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false },
    { type: "ByteFallback" }, { type: "Fuse" }] };
});
// Newer tokenizer.json files: merges as pairs; a Digits split before ByteLevel.
variant("bytelevel-digits-small", "gpt2", (json) => {
  json.model.merges = json.model.merges.map((m) => m.split(" "));
  json.pre_tokenizer = { type: "Sequence", pretokenizers: [
    { type: "Digits", individual_digits: true },
    { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true }] };
});
