// Tool calling through real clients, against a `plimsoll serve` whose chat
// template has a tool-call syntax (URL in PLIMSOLL_TOOLS_URL; run by
// tests/system/test_tools.py on a random-weight Qwen2 folder with Qwen2.5's
// template): the openai SDK (create, and its stream helper that accumulates
// tool-call deltas), @huggingface/inference's chatCompletion with tools, and
// LangChain JS ChatOpenAI.bindTools; arguments checked by ajv against the
// tool's `parameters`.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { InferenceClient } from "@huggingface/inference";
import { ChatOpenAI } from "@langchain/openai";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import Ajv from "ajv";

const url = process.env.PLIMSOLL_TOOLS_URL;
const skip = url ? false : "set PLIMSOLL_TOOLS_URL (tests/system/test_tools.py does)";
const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused" });
const hf = new InferenceClient(undefined, { endpointUrl: url });

const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Current weather in a city",
      parameters: {
        type: "object",
        properties: { city: { type: "string", maxLength: 20 }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
        required: ["city"],
        additionalProperties: false,
      },
    },
  },
  { type: "function", function: { name: "get_time", description: "The time now", parameters: { type: "object", properties: {} } } },
];
const messages = [{ role: "user", content: "What is the weather in Paris?" }];

const ajv = new Ajv({ strict: false });
const validArgs = Object.fromEntries(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));

function checkArgs(name, args) {
  assert.ok(validArgs[name](args), `${name}: ${JSON.stringify(validArgs[name].errors)} in ${JSON.stringify(args)}`);
}

function checkWeatherCall(call) {
  assert.equal(call.type, "function");
  assert.match(call.id, /^call_/);
  assert.equal(call.function.name, "get_weather");
  checkArgs("get_weather", JSON.parse(call.function.arguments));
}

test("openai: tool_choice required and named give tool_calls", { skip }, async () => {
  for (const seed of [1, 2, 3]) {
    const r = await openai.chat.completions.create({
      model: "m", messages, tools, tool_choice: { type: "function", function: { name: "get_weather" } },
      seed, max_tokens: 120,
    });
    assert.equal(r.choices[0].finish_reason, "tool_calls");
    assert.equal(r.choices[0].message.content, null);
    checkWeatherCall(r.choices[0].message.tool_calls[0]);
    const any = await openai.chat.completions.create({ model: "m", messages, tools, tool_choice: "required", seed, max_tokens: 120 });
    assert.equal(any.choices[0].finish_reason, "tool_calls");
    assert.ok(["get_weather", "get_time"].includes(any.choices[0].message.tool_calls[0].function.name));
  }
});

test("openai: the stream helper accumulates the tool-call deltas", { skip }, async () => {
  const body = { model: "m", messages, tools, tool_choice: { type: "function", function: { name: "get_weather" } }, seed: 7, max_tokens: 120 };
  const stream = openai.chat.completions.stream(body);
  const argumentDeltas = [];
  for await (const chunk of stream) {
    for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) if (d.function?.arguments) argumentDeltas.push(d.function.arguments);
  }
  const final = await stream.finalChatCompletion();
  assert.equal(final.choices[0].finish_reason, "tool_calls");
  const call = final.choices[0].message.tool_calls[0];
  checkWeatherCall(call);
  assert.ok(argumentDeltas.length > 1, `the arguments came in ${argumentDeltas.length} delta(s)`);  // as generated
  assert.equal(argumentDeltas.join(""), call.function.arguments);
  const whole = await openai.chat.completions.create(body);
  assert.equal(call.function.arguments, whole.choices[0].message.tool_calls[0].function.arguments);
});

test("openai: a tool result goes back into the conversation", { skip }, async () => {
  const first = await openai.chat.completions.create({ model: "m", messages, tools, tool_choice: "required", seed: 5, max_tokens: 120 });
  const call = first.choices[0].message.tool_calls[0];
  const r = await openai.chat.completions.create({
    model: "m", tools, max_tokens: 8,
    messages: [...messages, first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "{\"temperature\": 21}" }],
  });
  assert.ok(r.usage.prompt_tokens > first.usage.prompt_tokens);
});

test("huggingface: chatCompletion with tools", { skip }, async () => {
  const r = await hf.chatCompletion({ model: "m", messages, tools, tool_choice: "required", seed: 4, max_tokens: 120 });
  assert.equal(r.choices[0].finish_reason, "tool_calls");
  const call = r.choices[0].message.tool_calls[0];
  assert.ok(["get_weather", "get_time"].includes(call.function.name));
  assert.equal(typeof JSON.parse(call.function.arguments), "object");
});

test("langchain: ChatOpenAI.bindTools gives tool_calls, and a ToolMessage goes back", { skip }, async () => {
  const llm = new ChatOpenAI({ model: "qwen2", apiKey: "unused", configuration: { baseURL: `${url}/v1` }, maxTokens: 120 });
  for (const seed of [1, 2]) {
    const named = llm.bindTools(tools, { tool_choice: "get_weather", seed });
    const msg = await named.invoke([new HumanMessage("What is the weather in Paris?")]);
    assert.ok(msg instanceof AIMessage);
    assert.equal(msg.tool_calls.length, 1);
    assert.equal(msg.tool_calls[0].name, "get_weather");
    checkArgs("get_weather", msg.tool_calls[0].args);
    assert.equal(msg.response_metadata.finish_reason, "tool_calls");
  }
  const any = llm.bindTools(tools, { tool_choice: "required" });
  const first = await any.invoke([new HumanMessage("What time is it?")]);
  const call = first.tool_calls[0];
  assert.ok(["get_weather", "get_time"].includes(call.name));
  checkArgs(call.name, call.args);
  const answer = await llm.bindTools(tools).invoke([
    new HumanMessage("What time is it?"), first, new ToolMessage({ tool_call_id: call.id, content: "12:00" })]);
  assert.ok(answer.usage_metadata.input_tokens > first.usage_metadata.input_tokens);
});
