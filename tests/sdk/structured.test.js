// Structured output through real clients, against a running `plimsoll serve`
// (URL in PLIMSOLL_URL; tests/system/test_sdk.py runs it on stories260K, which
// knows nothing of JSON): the openai SDK's zodResponseFormat with
// chat.completions.parse (zod 4's own API and its `zod/v3` API), and LangChain
// JS ChatOpenAI.withStructuredOutput. Every answer is checked by ajv against
// the JSON schema the client sent; the grammar engine makes it valid whatever
// the weights, so several seeds.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { ChatOpenAI } from "@langchain/openai";
import { z } from "zod/v3";
import { z as z4 } from "zod";
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

// zod 4's own API, nested: integers with bounds (zod 4 writes `minimum` /
// `maximum` for every .int(), safe-integer bounds at least), enums, an
// optional field (nullable, as OpenAI's strict mode asks), nullable fields,
// bounded arrays of objects, bounded strings.
const Order = z4.object({
  id: z4.number().int().min(0).max(9999),
  status: z4.enum(["new", "paid", "shipped"]),
  note: z4.string().max(20).nullable().optional(),
  coupon: z4.string().max(8).nullable(),
  items: z4.array(z4.object({ sku: z4.string().min(1).max(8), qty: z4.number().int().min(1).max(5) })).min(1).max(3),
  customer: z4.object({ name: z4.string().max(16), tier: z4.enum(["gold", "silver"]).nullable() }),
});

// The schema corpus's other zod 4 shapes (tests/grammar_corpus/make_corpus.mjs): a
// recursive tree through z.lazy and a discriminated union (optional fields
// nullable, as OpenAI's strict mode asks).
const Category = z4.lazy(() =>
  z4.object({ name: z4.string().min(1).max(40), weight: z4.number().int().min(0).max(10), children: z4.array(Category).max(3) }));
const Tree = z4.object({ root: Category });
const Drawing = z4.object({
  title: z4.string().max(60),
  shapes: z4.array(z4.discriminatedUnion("kind", [
    z4.object({ kind: z4.literal("circle"), radius: z4.number().positive() }),
    z4.object({ kind: z4.literal("rect"), width: z4.number().int().min(1), height: z4.number().int().min(1) }),
    z4.object({ kind: z4.literal("label"), text: z4.string().min(1).max(200), size: z4.number().int().min(6).max(72).nullable() }),
  ])).min(1).max(4),
});

for (const [name, model] of [["order", Order], ["tree", Tree], ["drawing", Drawing]]) {
  test(`openai: zodResponseFormat of the zod 4 ${name} model parses to ajv-valid objects for 10 seeds`, async () => {
    const format = zodResponseFormat(model, name);
    const validate = new Ajv({ strict: false }).compile(format.json_schema.schema);
    for (let seed = 0; seed < 10; ++seed) {
      const r = await openai.chat.completions.parse({
        model: "m", messages: [{ role: "user", content: `Tim's ${name}` }], response_format: format, temperature: 1, seed,
      });
      const choice = r.choices[0];
      assert.equal(choice.finish_reason, "stop", `seed ${seed}: ${choice.message.content}`);
      assert.ok(validate(choice.message.parsed), `seed ${seed}: ` + JSON.stringify(validate.errors) + " in " + choice.message.content);
      assert.deepEqual(choice.message.parsed, model.parse(JSON.parse(choice.message.content)));
    }
  });
}

test("openai: parse() gets finish_reason stop for a value completed exactly at max_tokens", async () => {
  // The shortest valid Person, then max_tokens set to what one answer took: the value ends with the budget.
  const body = { model: "m", messages: [{ role: "user", content: "Tell me about Tim" }], response_format: responseFormat, seed: 3 };
  const first = await openai.chat.completions.parse(body);
  assert.equal(first.choices[0].finish_reason, "stop");
  const tight = await openai.chat.completions.parse({ ...body, max_tokens: first.usage.completion_tokens });
  assert.equal(tight.usage.completion_tokens, first.usage.completion_tokens);  // the value took the whole budget
  assert.equal(tight.choices[0].finish_reason, "stop");  // not "length": parse() would throw LengthFinishReasonError
  assertValid(tight.choices[0].message.parsed);
});

test("TGI's response_format forms on /v1/chat/completions: json and json_object with a value", async () => {
  const schema = { type: "object", properties: { color: { type: "string", enum: ["red", "blue"] } }, required: ["color"] };
  for (const type of ["json", "json_object"]) {
    const r = await openai.chat.completions.create({
      model: "m", messages: [{ role: "user", content: "A color" }], response_format: { type, value: schema }, seed: 1,
    });
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.ok(["red", "blue"].includes(JSON.parse(r.choices[0].message.content).color), r.choices[0].message.content);
  }
});
