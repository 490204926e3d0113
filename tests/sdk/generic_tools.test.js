// Tool calling on a model whose chat template has no tool syntax (stories260K:
// the generic JSON format, docs/api.md "Tool calling"), through real clients
// against a running `plimsoll serve` (URL in PLIMSOLL_URL; run by
// tests/system/test_sdk.py): the openai SDK's create, stream and runTools
// (a bounded loop), LangChain JS bindTools and withStructuredOutput through
// function calling. Arguments are checked by ajv against the tool's
// `parameters`; the grammar makes every call well formed whatever the weights.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { ChatOpenAI } from "@langchain/openai";
import { HumanMessage } from "@langchain/core/messages";
import { z } from "zod";
import Ajv from "ajv";

const url = process.env.PLIMSOLL_URL;
if (!url) throw new Error("set PLIMSOLL_URL to a running plimsoll serve");
const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused" });

// Small: stories260K has a 512-token context, and the tools are described in the prompt.
const weatherParams = {
  type: "object",
  properties: { city: { type: "string", maxLength: 12 }, unit: { type: "string", enum: ["c", "f"] } },
  required: ["city", "unit"],
  additionalProperties: false,
};
const tools = [{ type: "function", function: { name: "get_weather", description: "weather", parameters: weatherParams } }];
const messages = [{ role: "user", content: "Weather in Paris?" }];
const validWeather = new Ajv({ strict: false }).compile(weatherParams);

function checkWeatherCall(call) {
  assert.equal(call.type, "function");
  assert.match(call.id, /^call_/);
  assert.equal(call.function.name, "get_weather");
  const args = JSON.parse(call.function.arguments);
  assert.ok(validWeather(args), JSON.stringify(validWeather.errors) + " in " + call.function.arguments);
}

test("openai: tools on a model without tool syntax: calls or a reply, never a 400", async () => {
  let calls = 0;
  for (const seed of [1, 2, 3, 4]) {
    const r = await openai.chat.completions.create({ model: "m", messages, tools, seed, temperature: 1 });
    const choice = r.choices[0];
    if (choice.finish_reason === "tool_calls") {
      assert.equal(choice.message.content, null);
      choice.message.tool_calls.forEach(checkWeatherCall);
      calls++;
    } else {
      assert.equal(choice.finish_reason, "stop");
      assert.equal(typeof choice.message.content, "string");
      assert.equal(choice.message.tool_calls, undefined);
    }
  }
  for (const tool_choice of ["required", { type: "function", function: { name: "get_weather" } }]) {
    const r = await openai.chat.completions.create({ model: "m", messages, tools, tool_choice, seed: 5 });
    assert.equal(r.choices[0].finish_reason, "tool_calls");
    r.choices[0].message.tool_calls.forEach(checkWeatherCall);
  }
  const none = await openai.chat.completions.create({ model: "m", messages, tools, tool_choice: "none", max_tokens: 8 });
  assert.equal(none.choices[0].message.tool_calls, undefined);
});

test("openai: parallel_tool_calls false gives exactly one call", async () => {
  for (const seed of [1, 2, 3]) {
    const r = await openai.chat.completions.create({
      model: "m", messages, tools, tool_choice: "required", parallel_tool_calls: false, seed, temperature: 1,
    });
    assert.equal(r.choices[0].finish_reason, "tool_calls");
    assert.equal(r.choices[0].message.tool_calls.length, 1);
    checkWeatherCall(r.choices[0].message.tool_calls[0]);
  }
});

test("openai: streamed tool call arguments arrive in several deltas and add up", async () => {
  for (const parallel_tool_calls of [false, true]) {
    const body = { model: "m", messages, tools, tool_choice: "required", parallel_tool_calls, seed: 7 };
    const stream = openai.chat.completions.stream(body);
    const argumentDeltas = [];
    let heads = 0;
    for await (const chunk of stream) {
      for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) {
        if (d.id) {
          heads++;
          assert.equal(d.function.name, "get_weather");  // the name comes first, with the id
        }
        if (d.function?.arguments) argumentDeltas.push(d.function.arguments);
      }
    }
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, "tool_calls");
    assert.equal(final.choices[0].message.content ?? null, null);
    const calls = final.choices[0].message.tool_calls;
    assert.equal(calls.length, heads);
    calls.forEach(checkWeatherCall);
    assert.ok(argumentDeltas.length > calls.length, `arguments in ${argumentDeltas.length} deltas`);
    assert.equal(argumentDeltas.join(""), calls.map((c) => c.function.arguments).join(""));
    const whole = await openai.chat.completions.create(body);  // same seed: the same call, the same text
    assert.deepEqual(whole.choices[0].message.tool_calls.map((c) => c.function.arguments), calls.map((c) => c.function.arguments));
  }
});

test("openai: streamed auto answers match the whole ones, a reply's text streamed as it is written", async () => {
  let replies = 0;
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const body = { model: "m", messages, tools, seed, temperature: 1, max_tokens: 60 };
    const stream = openai.chat.completions.stream(body);
    let contentDeltas = 0;
    for await (const chunk of stream) if (chunk.choices[0]?.delta?.content) contentDeltas++;
    const streamed = (await stream.finalChatCompletion()).choices[0];
    const whole = (await openai.chat.completions.create(body)).choices[0];
    assert.equal(streamed.finish_reason, whole.finish_reason);
    assert.equal(streamed.message.content ?? null, whole.message.content);
    assert.deepEqual((streamed.message.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments]),
                     (whole.message.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments]));
    if (whole.finish_reason === "stop" && whole.message.content.length > 1) {
      replies++;
      assert.ok(contentDeltas > 1, `the reply came in ${contentDeltas} delta(s)`);
    }
  }
  assert.ok(replies > 0, "no seed answered with a reply");
});

test("openai: runTools calls the function and stops within maxChatCompletions", async () => {
  // One short argument and a bounded answer: the second request carries the call and its result (512-token context).
  const cityParams = { type: "object", properties: { city: { type: "string", maxLength: 8 } }, required: ["city"], additionalProperties: false };
  const validCity = new Ajv({ strict: false }).compile(cityParams);
  const seen = [];
  const weatherTool = {
    type: "function",
    function: {
      name: "weather", parameters: cityParams, parse: JSON.parse,
      function: (args) => {
        assert.ok(validCity(args), JSON.stringify(args));
        seen.push(args);
        return "sunny";
      },
    },
  };
  const runner = openai.chat.completions.runTools(
    { model: "m", messages: [{ role: "user", content: "Paris?" }], tools: [weatherTool], tool_choice: "required", seed: 3, max_tokens: 90 },
    { maxChatCompletions: 2 },
  );
  await runner.done();
  const completions = runner.allChatCompletions();
  assert.equal(completions.length, 2);  // "required": every answer calls, so the bound ends it
  assert.equal(seen.length, completions.reduce((n, c) => n + c.choices[0].message.tool_calls.length, 0));
  assert.ok(runner.messages.some((m) => m.role === "tool" && m.content === "sunny"));
  // "auto" ends when an answer is a reply, or at the bound.
  const auto = openai.chat.completions.runTools(
    { model: "m", messages: [{ role: "user", content: "Paris?" }], tools: [weatherTool], seed: 4, max_tokens: 90 },
    { maxChatCompletions: 2 },
  );
  await auto.done();
  assert.ok(auto.allChatCompletions().length <= 2);
});

test("langchain: bindTools and withStructuredOutput through function calling", async () => {
  const llm = new ChatOpenAI({ model: "stories260K", apiKey: "unused", configuration: { baseURL: `${url}/v1` }, temperature: 0 });
  const named = await llm.bindTools(tools, { tool_choice: "get_weather" }).invoke([new HumanMessage("Weather in Paris?")]);
  assert.equal(named.tool_calls.length, 1);
  assert.equal(named.tool_calls[0].name, "get_weather");
  assert.ok(validWeather(named.tool_calls[0].args), JSON.stringify(named.tool_calls[0].args));
  assert.equal(named.response_metadata.finish_reason, "tool_calls");
  const any = await llm.bindTools(tools).invoke([new HumanMessage("Weather in Paris?")]);
  for (const call of any.tool_calls) assert.ok(validWeather(call.args), JSON.stringify(call.args));
  // zod 4, no integers (the engine refuses `maximum`, which zod 4 writes for every .int()).
  const Pet = z.object({ name: z.string().max(12), kind: z.enum(["cat", "dog"]) });
  const pet = await llm.withStructuredOutput(Pet, { name: "pet", method: "functionCalling" }).invoke("Tell me about a pet");
  assert.deepEqual(pet, Pet.parse(pet));
});
