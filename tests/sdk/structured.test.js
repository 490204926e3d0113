// Structured output through real clients, against a running `plimsoll serve`
// (URL in PLIMSOLL_URL; tests/system/test_sdk.py runs it on stories260K, which
// knows nothing of JSON): the openai SDK's zodResponseFormat with
// chat.completions.parse, and LangChain JS ChatOpenAI.withStructuredOutput.
// Every answer is checked by ajv against the JSON schema the client sent; the
// grammar engine makes it valid whatever the weights, so several seeds.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { ChatOpenAI } from "@langchain/openai";
import { z } from "zod";
import Ajv from "ajv";

const url = process.env.PLIMSOLL_URL;
if (!url) throw new Error("set PLIMSOLL_URL to a running plimsoll serve");
const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused" });

const Person = z.object({
  name: z.string().max(30),
  age: z.number().int(),
  pets: z.array(z.enum(["cat", "dog"])).max(3),
  address: z.object({ city: z.string().max(20), zip: z.string().regex(/^[0-9]{5}$/) }),
});
const responseFormat = zodResponseFormat(Person, "person");
const validate = new Ajv({ strict: false }).compile(responseFormat.json_schema.schema);

function assertValid(value) {
  assert.ok(validate(value), JSON.stringify(validate.errors) + " in " + JSON.stringify(value));
}

test("openai: zodResponseFormat with chat.completions.parse is schema-valid for every seed", async () => {
  assert.equal(responseFormat.json_schema.strict, true);
  for (const seed of [0, 1, 2, 3, 4, 5]) {
    const r = await openai.chat.completions.parse({
      model: "m", messages: [{ role: "user", content: "Tell me about Tim" }], response_format: responseFormat,
      temperature: 1, seed,
    });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, "stop");
    assertValid(JSON.parse(choice.message.content));
    assert.deepEqual(choice.message.parsed, Person.parse(JSON.parse(choice.message.content)));
  }
});

test("openai: a streamed zod response format adds up to the same valid object", async () => {
  const body = { model: "m", messages: [{ role: "user", content: "Who is Lily?" }], response_format: responseFormat, seed: 9 };
  const stream = openai.chat.completions.stream(body);
  const final = await stream.finalChatCompletion();
  assertValid(final.choices[0].message.parsed);
  const whole = await openai.chat.completions.parse(body);
  assert.deepEqual(final.choices[0].message.parsed, whole.choices[0].message.parsed);
});

test("openai: json_object mode gives a JSON object", async () => {
  for (const seed of [1, 2]) {
    const r = await openai.chat.completions.create({
      model: "m", messages: [{ role: "user", content: "Answer in JSON" }], response_format: { type: "json_object" }, seed,
      max_tokens: 200,
    });
    if (r.choices[0].finish_reason === "stop") {
      const value = JSON.parse(r.choices[0].message.content);
      assert.equal(typeof value, "object");
      assert.ok(value !== null && !Array.isArray(value));
    } else {
      assert.equal(r.choices[0].finish_reason, "length");  // cut by max_tokens: a prefix of an object
      assert.match(r.choices[0].message.content, /^\s*\{/);
    }
  }
});

test("langchain: ChatOpenAI.withStructuredOutput(zod) returns a schema-valid object", async () => {
  const llm = new ChatOpenAI({ model: "stories260K", apiKey: "unused", configuration: { baseURL: `${url}/v1` }, temperature: 0 });
  const structured = llm.withStructuredOutput(Person, { name: "person", includeRaw: true });
  const r = await structured.invoke("Tell me about Tim");
  assertValid(r.parsed);
  assert.equal(r.raw.response_metadata.finish_reason, "stop");
  assert.deepEqual(r.parsed, JSON.parse(r.raw.content));
  const again = await llm.withStructuredOutput(Person, { name: "person" }).invoke("Tell me about Tim");
  assert.deepEqual(again, r.parsed);  // greedy: the same answer
});
