// Records the token ids of rendered chat prompts (renders.jsonl rows with
// add_generation_prompt) under the matching small tokenizer, encoded as
// transformers' apply_chat_template(tokenize=True) does: add_special_tokens=false.
// Output: tests/data/chat_templates/chat_ids.jsonl; --check compares instead.
import fs from "fs";
import path from "path";
import { Tokenizer } from "@huggingface/tokenizers";
import { here, readJsonl, smallDir } from "./tokenizer_sources.mjs";

const dir = path.join(here, "../data/chat_templates");
const out = path.join(dir, "chat_ids.jsonl");
const check = process.argv.includes("--check");
// template -> the small tokenizer of the same model family
const pairs = { qwen2_5: "qwen2_5", llama3: "llama3" };

const tokenizers = {};
for (const name of new Set(Object.values(pairs))) {
  const d = smallDir(name);
  const json = JSON.parse(fs.readFileSync(`${d}/tokenizer.json`, "utf8"));
  const config = JSON.parse(fs.readFileSync(`${d}/tokenizer_config.json`, "utf8"));
  tokenizers[name] = new Tokenizer(json, config);
}
const lines = [];
for (const r of readJsonl(path.join(dir, "renders.jsonl"))) {
  if (!(r.template in pairs) || !r.add_generation_prompt || r.output === undefined) continue;
  const tokenizer = `${pairs[r.template]}-small`;
  const ids = tokenizers[pairs[r.template]].encode(r.output, { add_special_tokens: false }).ids;
  lines.push(JSON.stringify({ template: r.template, tokenizer, conversation: r.conversation, messages: r.messages,
                              bos_token: r.bos_token, eos_token: r.eos_token, output: r.output, ids }));
}
const text = lines.join("\n") + "\n";
if (check) {
  const same = fs.existsSync(out) && fs.readFileSync(out, "utf8") === text;
  console.log(`chat ids: ${same ? "matches" : "DIFFERS from"} ${out}`);
  process.exit(same ? 0 : 1);
}
fs.writeFileSync(out, text);
console.log(`chat ids: ${lines.length} lines -> ${out}`);
