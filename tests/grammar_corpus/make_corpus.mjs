// Writes the pinned JSON Schema corpus, tests/data/schemas/*.json, from the
// libraries that write such schemas in the wild (versions pinned by this
// folder's package-lock.json):
//   zod4_*        zod 4's z.toJSONSchema (draft 2020-12)
//   openai_*      the response_format.json_schema.schema the openai SDK sends
//                 for zodResponseFormat (openai/helpers/zod, zod 4), captured
//                 from the request body
//   zod3_*        the zod 3 API (zod/v3) through zod-to-json-schema
//   langchain_*   what @langchain/openai's ChatOpenAI sends for
//                 withStructuredOutput (json_schema and function calling) and
//                 bindTools, captured from the request body
// pydantic_*.json are written by hand (no PyPI here): see README.md.
//
//   npm ci --prefix tests/grammar_corpus && node tests/grammar_corpus/make_corpus.mjs
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import * as z4 from "zod";
import * as z3 from "zod/v3";
import { zodToJsonSchema } from "zod-to-json-schema";
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { ChatOpenAI } from "@langchain/openai";
import { tool } from "@langchain/core/tools";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "data", "schemas");
mkdirSync(out, { recursive: true });
const written = [];
function write(name, schema) {
  writeFileSync(join(out, `${name}.json`), JSON.stringify(schema, null, 2) + "\n");
  written.push(name);
}

// The models, written once against the API zod 3 and zod 4 share. `absent`
// makes a field that may be left out: .optional() in general, .nullable() for
// OpenAI's strict mode, where every field must be required.
function order(z, absent = (s) => s.optional()) {
  const address = z.object({
    street: z.string().min(1).max(120),
    city: z.string().min(1).max(60),
    country: z.enum(["US", "GB", "DE", "FR", "JP"]),
    postcode: z.string().max(10).nullable(),
  });
  const lineItem = z.object({
    sku: z.string().min(3).max(32),
    quantity: z.number().int().min(1).max(100),
    unit_price_cents: z.number().int().nonnegative(),
    note: absent(z.string().max(500)),
  });
  return z.object({
    order_id: z.number().int(),
    status: z.enum(["pending", "paid", "shipped", "cancelled"]),
    customer: z.object({
      name: z.string().min(1).max(80),
      email: z.string().max(254).nullable(),
      vip: absent(z.boolean()),
    }),
    shipping: address,
    billing: address.nullable(),
    items: z.array(lineItem).min(1).max(5),
    tags: absent(z.array(z.string().max(20)).max(3)),
    comment: absent(z.string().max(500).nullable()),
    priority: z.number().int().min(1).max(5).nullable(),
    discount: absent(z.number().min(0).max(1)),
  });
}

// A recursive model through z.lazy: a category tree.
function tree(z) {
  const category = z.lazy(() =>
    z.object({
      name: z.string().min(1).max(40),
      weight: z.number().int().min(0).max(10),
      children: z.array(category).max(3),
    }),
  );
  return z.object({ root: category });
}

// A discriminated union: the shapes of a drawing.
function drawing(z, absent = (s) => s.optional()) {
  const shape = z.discriminatedUnion("kind", [
    z.object({ kind: z.literal("circle"), radius: z.number().positive() }),
    z.object({ kind: z.literal("rect"), width: z.number().int().min(1), height: z.number().int().min(1) }),
    z.object({
      kind: z.literal("label"),
      text: z.string().min(1).max(200),
      size: absent(z.number().int().min(6).max(72)),
    }),
  ]);
  return z.object({ title: z.string().max(100), shapes: z.array(shape).min(1).max(4) });
}

// Counts in fixed steps (multipleOf): integers only, the sizes of a shipment.
function pack(z) {
  return z.object({
    boxes: z.number().int().multipleOf(6).min(6).max(600),
    weight_grams: z.number().int().multipleOf(250).nonnegative(),
    slots: z.array(z.number().int().multipleOf(7)).max(4),
    window_minutes: z.number().multipleOf(15).min(0).max(1440),
  });
}

// zod 4: z.toJSONSchema, its defaults (draft 2020-12).
write("zod4_order", z4.toJSONSchema(order(z4)));
write("zod4_tree", z4.toJSONSchema(tree(z4)));
write("zod4_drawing", z4.toJSONSchema(drawing(z4)));
write("zod4_pack", z4.toJSONSchema(pack(z4)));

// zod 3 API: zod-to-json-schema, its defaults (draft-07, $ref to the first use).
write("zod3_order", zodToJsonSchema(order(z3)));
write("zod3_tree", zodToJsonSchema(tree(z3)));
write("zod3_drawing", zodToJsonSchema(drawing(z3)));
write("zod3_pack", zodToJsonSchema(pack(z3)));

// A fetch that keeps each request's JSON body and answers with a chat
// completion whose content is `{}` (what the clients do with it is not our
// concern; errors after the request was sent are ignored).
const bodies = [];
async function fakeFetch(url, init) {
  bodies.push(JSON.parse(init.body));
  const completion = {
    id: "chatcmpl-corpus", object: "chat.completion", created: 0, model: "corpus",
    choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "{}" } }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };
  return new Response(JSON.stringify(completion), { status: 200, headers: { "content-type": "application/json" } });
}
async function captured(send) {
  const before = bodies.length;
  try {
    await send();
  } catch (e) {
    if (bodies.length === before) throw e;
  }
  if (bodies.length !== before + 1) throw new Error(`expected one request, saw ${bodies.length - before}`);
  return bodies[bodies.length - 1];
}

// openai SDK: chat.completions.create with zodResponseFormat (zod 4), as sent.
const openai = new OpenAI({ apiKey: "corpus", baseURL: "http://corpus.invalid/v1", fetch: fakeFetch, maxRetries: 0 });
const strict = (s) => s.nullable();
for (const [name, model] of [["order", order(z4, strict)], ["tree", tree(z4)], ["drawing", drawing(z4, strict)]]) {
  const body = await captured(() =>
    openai.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "corpus" }],
      response_format: zodResponseFormat(model, name),
    }),
  );
  write(`openai_${name}`, body.response_format.json_schema.schema);
}

// LangChain JS: ChatOpenAI's withStructuredOutput (its default, json_schema, and
// function calling) and bindTools, as sent.
const chat = new ChatOpenAI({
  model: "gpt-4o-mini",
  apiKey: "corpus",
  maxRetries: 0,
  configuration: { baseURL: "http://corpus.invalid/v1", fetch: fakeFetch },
});
{
  const body = await captured(() => chat.withStructuredOutput(order(z4), { name: "order" }).invoke("corpus"));
  write("langchain_structured_order", body.response_format.json_schema.schema);
}
{
  const body = await captured(() =>
    chat.withStructuredOutput(drawing(z4), { name: "drawing", method: "functionCalling" }).invoke("corpus"),
  );
  write("langchain_function_drawing", body.tools[0].function.parameters);
}
{
  const getWeather = tool(async () => "sunny", {
    name: "get_weather",
    description: "The weather at a place",
    schema: z4.object({
      location: z4.string().min(1).max(100).describe("City and country"),
      unit: z4.enum(["celsius", "fahrenheit"]).optional(),
      days: z4.number().int().min(1).max(7).describe("Days of forecast"),
    }),
  });
  const searchOrders = tool(async () => "[]", {
    name: "search_orders",
    description: "Orders matching a query",
    schema: z3.object({
      query: z3.string().max(200),
      status: z3.enum(["pending", "paid", "shipped", "cancelled"]).nullable(),
      limit: z3.number().int().min(1).max(50).default(10),
      since: z3.string().optional().describe("ISO date"),
    }),
  });
  const body = await captured(() => chat.bindTools([getWeather, searchOrders]).invoke("corpus"));
  for (const t of body.tools) write(`langchain_tool_${t.function.name}`, t.function.parameters);
}

console.log(`wrote ${written.length} schemas to ${out}: ${written.join(", ")}`);
