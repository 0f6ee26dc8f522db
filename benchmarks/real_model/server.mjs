// An OpenAI-compatible chat-completions server on 127.0.0.1 for one GGUF model, on CPU,
// with node-llama-cpp (its prebuilt llama.cpp binary). Used by `make real-model`.
//
//   node server.mjs MODEL.gguf PORT [THREADS] [REQUESTS.jsonl]
//
// REQUESTS.jsonl, when given, gets one line per answered request: its seed, tokens in and
// out, seconds and response format (what run.py counts a simulated user's cost from).
//
// POST /v1/chat/completions takes the usual request: messages (system, user, assistant
// with tool_calls, tool), tools, response_format (json_schema or json_object), max_tokens,
// temperature, seed. GET /v1/models lists the model. One request is answered at a time
// (a CPU model gains nothing from more), as a small local server does.
//
// Tool calling: a model without a native tool format (Gemma 3 270M has none) is asked for
// one JSON object, {"tool": NAME, "arguments": {...}} or {"answer": TEXT}, and its
// output is constrained to that schema by a grammar (what llama.cpp's server does for
// such models); the object is returned as an OpenAI tool call or message.
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { getLlama, LlamaChatSession } from "node-llama-cpp";

const [modelPath, portText = "8080", threadsText = "1", requestLog] = process.argv.slice(2);
if (!modelPath) {
  console.error("usage: node server.mjs MODEL.gguf PORT [THREADS]");
  process.exit(2);
}
const modelName = path.basename(modelPath, ".gguf");
const llama = await getLlama({ gpu: false, build: "never", maxThreads: Number(threadsText) });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({ contextSize: 8192, threads: Number(threadsText) });
const sequence = context.getSequence();

/** The part of a JSON schema the grammar builder takes: types, properties, required,
 *  enums, items, const (a type list keeps its first non-null type). */
function simplify(schema) {
  if (!schema || typeof schema !== "object") return { type: "string" };
  if (schema.enum) return { enum: schema.enum };
  if (schema.const !== undefined) return { const: schema.const };
  const types = [].concat(schema.type || []);
  const type = types.find((t) => t !== "null") || (schema.properties ? "object" : "string");
  if (type === "object") {
    const properties = {};
    for (const [name, value] of Object.entries(schema.properties || {})) {
      properties[name] = simplify(value);
    }
    const required = (schema.required || []).filter((name) => name in properties);
    return { type: "object", properties, required };
  }
  if (type === "array") return { type: "array", items: simplify(schema.items) };
  return { type };
}

function toolSchema(tools) {
  const calls = tools.map((t) => ({
    type: "object",
    properties: { tool: { const: t.function.name }, arguments: simplify(t.function.parameters) },
    required: ["tool", "arguments"],
  }));
  const answer = {
    type: "object",
    properties: { answer: { type: "string" } },
    required: ["answer"],
  };
  return { oneOf: [...calls, answer] };
}

function toolPrompt(tools) {
  const lines = tools.map(
    (t) => `- ${t.function.name}: ${t.function.description || ""} arguments: ` +
      JSON.stringify(t.function.parameters || {}),
  );
  return "You can call these tools:\n" + lines.join("\n") +
    '\nReply with one JSON object: {"tool": NAME, "arguments": {...}} to call a tool, ' +
    'or {"answer": TEXT} to answer the user when you are done.';
}

function text(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => part.text || "").join("");
  return "";
}

/** The chat history node-llama-cpp takes, and the last user text to prompt with. */
function history(messages, tools) {
  const items = [];
  let system = tools.length ? toolPrompt(tools) : "";
  for (const m of messages) {
    const instruction = m.role === "system" || m.role === "developer";
    if (instruction && !items.length) {
      system = [text(m.content), system].filter(Boolean).join("\n\n");
    } else if (instruction) {
      // An instruction after the conversation began (a simulated user's "that reply was
      // rejected") is said at that point, as chat templates without a system role do.
      items.push({ type: "user", text: text(m.content) });
    } else if (m.role === "user") {
      items.push({ type: "user", text: text(m.content) });
    } else if (m.role === "tool") {
      items.push({ type: "user", text: `Tool result: ${text(m.content)}` });
    } else if (m.role === "assistant") {
      const calls = (m.tool_calls || []).map((c) =>
        JSON.stringify({ tool: c.function.name, arguments: JSON.parse(c.function.arguments || "{}") }),
      );
      const said = calls.length ? calls.join("\n") : tools.length
        ? JSON.stringify({ answer: text(m.content) })
        : text(m.content);
      items.push({ type: "model", response: [said] });
    }
  }
  // Consecutive user turns (a tool result after a user message) become one.
  const merged = [];
  for (const item of items) {
    const last = merged[merged.length - 1];
    if (last && last.type === "user" && item.type === "user") last.text += "\n\n" + item.text;
    else merged.push({ ...item });
  }
  let prompt = "";
  if (merged.length && merged[merged.length - 1].type === "user") prompt = merged.pop().text;
  return { chat: [...(system ? [{ type: "system", text: system }] : []), ...merged], prompt };
}

let queue = Promise.resolve();
let counter = 0;

async function complete(body) {
  const tools = body.tools || [];
  const { chat, prompt } = history(body.messages || [], tools);
  const session = new LlamaChatSession({ contextSequence: sequence, autoDisposeSequence: false });
  session.setChatHistory(chat);
  const format = body.response_format || {};
  let grammar;
  if (tools.length) grammar = await llama.createGrammarForJsonSchema(toolSchema(tools));
  else if (format.type === "json_schema") {
    grammar = await llama.createGrammarForJsonSchema(format.json_schema.schema);
  } else if (format.type === "json_object") grammar = await llama.getGrammarFor("json");
  const before = sequence.tokenMeter.getState();
  const started = performance.now();
  const out = await session.prompt(prompt, {
    grammar,
    maxTokens: body.max_tokens || 512,
    temperature: body.temperature ?? 0,
    seed: body.seed,
  });
  const after = sequence.tokenMeter.getState();
  session.dispose({ disposeSequence: false });
  await sequence.clearHistory();
  let message = { role: "assistant", content: out };
  let finish = "stop";
  let parsed;
  try {
    parsed = tools.length ? JSON.parse(out) : undefined;
  } catch {
    finish = "length"; // cut by max_tokens inside the object: returned as text, as it is
  }
  if (parsed) {
    if (parsed.tool !== undefined) {
      counter += 1;
      message = {
        role: "assistant",
        content: null,
        tool_calls: [{
          id: `call_${counter}`,
          type: "function",
          function: { name: parsed.tool, arguments: JSON.stringify(parsed.arguments || {}) },
        }],
      };
      finish = "tool_calls";
    } else message = { role: "assistant", content: parsed.answer };
  }
  const input = after.usedInputTokens - before.usedInputTokens;
  const output = after.usedOutputTokens - before.usedOutputTokens;
  if (requestLog) {
    const seconds = (performance.now() - started) / 1000;
    const line = { seed: body.seed ?? null, input, output, seconds, format: format.type || null };
    fs.appendFileSync(requestLog, JSON.stringify(line) + "\n");
  }
  return {
    id: `chatcmpl-${counter}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: modelName,
    choices: [{ index: 0, message, finish_reason: finish }],
    usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output },
  };
}

function send(res, status, payload) {
  const data = JSON.stringify(payload);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(data) });
  res.end(data);
}

const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url.replace(/\/$/, "") === "/v1/models") {
    send(res, 200, { object: "list", data: [{ id: modelName, object: "model", owned_by: "local" }] });
    return;
  }
  if (req.method !== "POST" || req.url.replace(/\/$/, "") !== "/v1/chat/completions") {
    send(res, 404, { error: { message: "not found" } });
    return;
  }
  let raw = "";
  req.on("data", (chunk) => { raw += chunk; });
  req.on("end", () => {
    queue = queue.then(async () => {
      try {
        send(res, 200, await complete(JSON.parse(raw)));
      } catch (err) {
        console.error(err);
        send(res, 500, { error: { message: String(err && err.message || err) } });
      }
    });
  });
});
server.listen(Number(portText), "127.0.0.1", () => {
  console.log(`serving ${modelName} on http://127.0.0.1:${portText}/v1`);
});
