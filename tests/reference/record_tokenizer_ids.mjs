// Records @huggingface/tokenizers' ids for every corpus line and tokenizer into
// tests/data/hf_tokenizer/<name>.ref.jsonl; --check compares instead of writing.
// Each line: {"ids": [...]} (+ "decoded" when decode(ids) is not the input: the raw decode,
// clean_up_tokenization_spaces false, which Plimsoll's decode_raw() gives,
// + "with_special" for the first lines: encode with add_special_tokens).
import fs from "fs";
import { Tokenizer } from "@huggingface/tokenizers";
import { allTokenizers, dataDir, readJsonl } from "./tokenizer_sources.mjs";

const check = process.argv.includes("--check");
const kWithSpecialLines = 40;
const corpus = readJsonl(`${dataDir}/corpus.jsonl`);
let failures = 0;

for (const [name, dir] of allTokenizers()) {
  const json = JSON.parse(fs.readFileSync(`${dir}/tokenizer.json`, "utf8"));
  const config = JSON.parse(fs.readFileSync(`${dir}/tokenizer_config.json`, "utf8"));
  const tokenizer = new Tokenizer(json, config);
  const lines = corpus.map((text, i) => {
    const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
    const record = { ids };
    const decoded = ids.length === 0 ? "" : tokenizer.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false });
    if (decoded !== text) record.decoded = decoded;
    if (i < kWithSpecialLines) record.with_special = tokenizer.encode(text, { add_special_tokens: true }).ids;
    return JSON.stringify(record);
  });
  const file = `${dataDir}/${name}.ref.jsonl`;
  const text = lines.join("\n") + "\n";
  if (check) {
    const same = fs.existsSync(file) && fs.readFileSync(file, "utf8") === text;
    console.log(`${name}: ${same ? "matches" : "DIFFERS from"} ${file}`);
    if (!same) failures++;
  } else {
    fs.writeFileSync(file, text);
    console.log(`${name}: ${lines.length} lines -> ${file}`);
  }
}
process.exit(failures > 0 ? 1 : 0);
