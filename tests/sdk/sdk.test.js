// Real clients nobody here wrote, against a running `plimsoll serve`
// (URL in PLIMSOLL_URL): the openai SDK (completions, chat, streaming) and
// @huggingface/inference's text generation against the TGI routes.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { InferenceClient } from "@huggingface/inference";
// v3 of the same client posts TGI's wire format ({inputs, parameters}, SSE)
// to an endpoint URL; v4 talks to /v1/completions instead. Both are tested.
import { InferenceClient as InferenceClientV3 } from "hf-inference-v3";

const url = process.env.PLIMSOLL_URL;
if (!url) throw new Error("set PLIMSOLL_URL to a running plimsoll serve");
const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused" });
const hf = new InferenceClientV3(undefined, { endpointUrl: url });
const hf4 = new InferenceClient(undefined, { endpointUrl: url });

test("openai: models lists the served model", async () => {
  const models = await openai.models.list();
  assert.ok(models.data.length >= 1);
});

test("openai: completions, greedy, with usage", async () => {
  const r = await openai.completions.create({ model: "m", prompt: "Once upon a time", max_tokens: 20, temperature: 0 });
  assert.match(r.choices[0].text, /^, there was a little girl/);
  assert.equal(r.usage.completion_tokens, 20);
  assert.ok(["length", "stop"].includes(r.choices[0].finish_reason));
});

test("openai: completions with a list of prompts", async () => {
  const r = await openai.completions.create({ model: "m", prompt: ["Lily wanted to", "The cat sat on the"], max_tokens: 8, temperature: 0 });
  assert.equal(r.choices.length, 2);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
});

test("openai: streamed completions end and add up", async () => {
  const stream = await openai.completions.create({ model: "m", prompt: "Once upon a time", max_tokens: 20, temperature: 0, stream: true });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
  const whole = await openai.completions.create({ model: "m", prompt: "Once upon a time", max_tokens: 20, temperature: 0 });
  assert.equal(text, whole.choices[0].text);
});

test("openai: chat completions, plain and streamed", async () => {
  const messages = [{ role: "user", content: "Tell me a story" }];
  const r = await openai.chat.completions.create({ model: "m", messages, max_tokens: 16, temperature: 0 });
  assert.equal(r.choices[0].message.role, "assistant");
  assert.ok(r.choices[0].message.content.length > 0);
  const stream = await openai.chat.completions.create({ model: "m", messages, max_tokens: 16, temperature: 0, stream: true });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  assert.equal(text, r.choices[0].message.content);
});

test("openai: a refused request is OpenAI's 400 error object, naming the param", async () => {
  await assert.rejects(
    openai.completions.create({ model: "m", prompt: "x", max_tokens: 100000 }),
    (e) => e.status === 400 && e.type === "invalid_request_error" && e.param === "prompt" && /max_tokens/.test(e.message),
  );
  await assert.rejects(
    openai.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }], response_format: { type: "xml" } }),
    (e) => e.status === 400 && e.param === "response_format.type" && /"text", "json_object", "json_schema"/.test(e.message),
  );
});

test("openai: stop sequences are left out of the text, streamed or not", async () => {
  const plain = await openai.completions.create({ model: "m", prompt: "Once upon a time", max_tokens: 20, temperature: 0 });
  const text = plain.choices[0].text;  // ", there was a little girl..."
  const r = await openai.completions.create({ model: "m", prompt: "Once upon a time", max_tokens: 20, temperature: 0, stop: ["little"] });
  assert.equal(r.choices[0].text, text.slice(0, text.indexOf("little")));
  assert.equal(r.choices[0].finish_reason, "stop");
  const stream = await openai.completions.create({ model: "m", prompt: "Once upon a time", max_tokens: 20, temperature: 0, stop: ["little"], stream: true });
  let streamed = "";
  for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? "";
  assert.equal(streamed, r.choices[0].text);
});

test("openai: models.retrieve, and chat with response_format text and no tools", async () => {
  const { data } = await openai.models.list();
  const model = await openai.models.retrieve(data[0].id);
  assert.equal(model.id, data[0].id);
  const r = await openai.chat.completions.create({ model: "m", messages: [{ role: "user", content: "Tell me a story" }],
    max_tokens: 8, temperature: 0, response_format: { type: "text" }, tools: [] });
  assert.ok(["length", "stop"].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.completion_tokens > 0);
});

test("huggingface v4: textGeneration through /v1/completions", async () => {
  const r = await hf4.textGeneration({ inputs: "Once upon a time", parameters: { max_new_tokens: 12 } });
  assert.equal(typeof r.generated_text, "string");
  assert.ok(r.generated_text.length > 0);
});

test("huggingface v3: textGeneration on the TGI route", async () => {
  const r = await hf.textGeneration({ inputs: "Once upon a time", parameters: { max_new_tokens: 20 } });
  assert.match(r.generated_text, /there was a little girl/);
});

test("huggingface v3: textGenerationStream on the TGI route", async () => {
  let text = "";
  let final = null;
  for await (const ev of hf.textGenerationStream({ inputs: "Once upon a time", parameters: { max_new_tokens: 20, details: true } })) {
    text += ev.token.text;
    if (ev.generated_text !== null && ev.generated_text !== undefined) final = ev;
  }
  assert.ok(final, "a final event with generated_text");
  // v3 posts to the endpoint URL itself: TGI's POST /, where return_full_text
  // defaults to true; the token texts add up to the generated part.
  assert.equal(final.generated_text, "Once upon a time" + text);
  assert.equal(final.details.generated_tokens, 20);
});
