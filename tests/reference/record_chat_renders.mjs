// Records @huggingface/jinja's rendering of every template in
// tests/data/chat_templates/*.jinja over a set of conversations into
// tests/data/chat_templates/renders.jsonl; --check compares instead of writing.
import fs from "fs";
import path from "path";
import { Template } from "@huggingface/jinja";
import { here } from "./tokenizer_sources.mjs";
import { snippets } from "./chat_snippets.mjs";

const dir = path.join(here, "../data/chat_templates");
const out = path.join(dir, "renders.jsonl");
const check = process.argv.includes("--check");

const specials = {
  chatml: ["<s>", "</s>"], gemma3: ["<bos>", "<eos>"], deepseek_coder: ["<｜begin▁of▁sentence｜>", "<|EOT|>"], gemma: ["<bos>", "<eos>"],
  llama2: ["<s>", "</s>"], llama3: ["<|begin_of_text|>", "<|eot_id|>"], mistral: ["<s>", "</s>"],
  mistral_v01: ["<s>", "</s>"], qwen2_5: ["", "<|im_end|>"], zephyr: ["<s>", "</s>"],
};

const u = (content) => ({ role: "user", content });
const a = (content) => ({ role: "assistant", content });
const s = (content) => ({ role: "system", content });
const conversations = {
  single_user: [u("Hello!")],
  multi_turn: [u("Hello, how are you?"), a("I'm doing great. How can I help you today?"), u("Show me chat templates.")],
  system_multi_turn: [s("You are a pirate."), u("Hi"), a("Arr!"), u("Where is the treasure?")],
  system_only_user: [s("Answer briefly."), u("2+2?")],
  ends_with_assistant: [u("Ping"), a("Pong")],
  padded_unicode: [u("   Grüße, 世界 😀\n\n  "), a("\tcafé naïve  "), u("line one\nline two")],
  not_alternating: [u("first"), u("second")],
  starts_with_assistant: [a("I speak first"), u("ok")],
};

const lines = [];
for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".jinja")).sort()) {
  const name = file.slice(0, -".jinja".length);
  const template = new Template(fs.readFileSync(path.join(dir, file), "utf8"));
  const [bos_token, eos_token] = specials[name];
  for (const [conversation, messages] of Object.entries(conversations)) {
    for (const add_generation_prompt of [false, true]) {
      const record = { template: name, conversation, add_generation_prompt, bos_token, eos_token, messages };
      try {
        record.output = template.render({ messages, add_generation_prompt, bos_token, eos_token, tools: null });
      } catch (e) {
        record.error = e.message;
      }
      lines.push(JSON.stringify(record));
    }
  }
}
for (const [name, source, context] of snippets) {
  const record = { template: "snippet", conversation: name, source, context };
  try {
    record.output = new Template(source).render(context);
  } catch (e) {
    record.error = e.message;
  }
  lines.push(JSON.stringify(record));
}
const text = lines.join("\n") + "\n";
if (check) {
  const same = fs.existsSync(out) && fs.readFileSync(out, "utf8") === text;
  console.log(`chat renders: ${same ? "match" : "DIFFER from"} ${out}`);
  process.exit(same ? 0 : 1);
}
fs.writeFileSync(out, text);
console.log(`chat renders: ${lines.length} -> ${out}`);
