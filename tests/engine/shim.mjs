// An OpenAI-compatible server in front of llama.cpp (npm's node-llama-cpp, its prebuilt CPU
// build): the tests' real engine. Prefill, decode, batching across sequences, the KV cache and
// the tokenizer are llama.cpp's; this file only speaks HTTP. Each answer ends with llama.cpp
// server's own `timings` (prompt_n, prompt_ms, predicted_n, predicted_ms, ...), measured around
// llama.cpp's evaluation, so a test can hold infdoctor's fits against the engine's own clock.
//
//   node shim.mjs --model NAME=FILE.gguf [--model ...] [--slots N] [--threads N]
//                 [--overhead-ms NAME=MS] [--host H] [--port P]
// Prints "listening on PORT" when it accepts requests; stops on SIGTERM.
//   --slots N         sequences each model decodes at once (llama.cpp's parallel slots); more
//                     requests wait in line, first come first served (default 4)
//   --overhead-ms     a fixed wait before the model starts on a request, as a gateway or a
//                     separate backend in front of it adds (a planted fault)
import http from "node:http";
import {getLlama} from "node-llama-cpp";

const args = process.argv.slice(2);
const models = new Map();   // name -> {path, overheadMs}
let slots = 4, threads = 1, port = 0, host = "127.0.0.1";
for (let i = 0; i < args.length; i++) {
  const a = args[i], v = args[i + 1];
  if (a === "--model") {
    const [name, path] = v.split("=");
    models.set(name, {path, overheadMs: 0});
  } else if (a === "--overhead-ms") {
    const [name, ms] = v.split("=");
    if (!models.has(name)) throw new Error(`--overhead-ms: no --model ${name} before it`);
    models.get(name).overheadMs = Number(ms);
  } else if (a === "--slots") slots = Number(v);
  else if (a === "--threads") threads = Number(v);
  else if (a === "--port") port = Number(v);
  else if (a === "--host") host = v;
  else throw new Error(`unknown argument ${a}`);
  i++;
}
if (models.size === 0) throw new Error("no --model NAME=FILE.gguf");

const contextSize = 4096;
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
for (const [name, m] of models) {
  m.model = await llama.loadModel({modelPath: m.path});
  // One thread: on a small machine llama.cpp's threads spin against each other and the client.
  m.context = await m.model.createContext({contextSize, sequences: slots, threads, batchSize: 512});
  m.free = [];
  for (let s = 0; s < slots; s++) m.free.push(m.context.getSequence());
  m.waiting = [];
  m.name = name;
}

// A sequence of the model's context, or a wait in line for one.
function acquire(m) {
  if (m.free.length > 0) return Promise.resolve(m.free.shift());
  return new Promise((resolve) => m.waiting.push(resolve));
}
function release(m, seq) {
  const next = m.waiting.shift();
  if (next) next(seq);
  else m.free.push(seq);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function error(res, status, message, type, code) {
  res.writeHead(status, {"content-type": "application/json"});
  res.end(JSON.stringify({error: {message, type, code, param: null}}));
}

let served = 0;

async function chat(req, res, body) {
  const m = models.get(body.model);
  if (!m) return error(res, 404, `The model \`${body.model}\` does not exist`, "invalid_request_error", "model_not_found");
  const text = (body.messages || []).map((x) => (typeof x.content === "string" ? x.content : "")).join("\n");
  const maxTokens = Number(body.max_completion_tokens ?? body.max_tokens ?? 16);
  const prompt = m.model.tokenize(text);
  if (prompt.length + maxTokens > contextSize)
    return error(res, 400,
                 `This model's maximum context length is ${contextSize} tokens. However, you requested ` +
                     `${prompt.length + maxTokens} tokens. Please reduce the length of the messages or completion.`,
                 "invalid_request_error", "context_length_exceeded");
  const stream = body.stream === true;
  const usage = stream ? body.stream_options?.include_usage === true : true;
  const id = `chatcmpl-${process.pid}-${++served}`;
  const created = Math.floor(Date.now() / 1000);
  let closed = false;
  res.on("close", () => { closed = true; });
  if (stream) res.writeHead(200, {"content-type": "text/event-stream", "cache-control": "no-cache", "x-request-id": id});
  const chunk = (delta, finish) => ({id, object: "chat.completion.chunk", created, model: m.name,
                                     choices: [{index: 0, delta, finish_reason: finish}]});
  const send = (obj) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
  if (stream) send(chunk({role: "assistant", content: ""}, null));

  if (m.overheadMs > 0) await sleep(m.overheadMs);
  const seq = await acquire(m);
  let content = "", n = 0, promptMs = 0, t0 = 0, tFirst = 0, tLast = 0, cachedTokens = 0;
  try {
    // A sequence keeps what it evaluated last. As llama.cpp's server does with a slot's cache
    // (cache_prompt), the prefix it shares with this prompt is kept and the rest of the cache
    // dropped; the prompt's remainder is evaluated (its last token at least, for the logits).
    t0 = performance.now();
    const cached = seq.contextTokens;
    let keep = 0;
    while (keep < cached.length && keep < prompt.length - 1 && cached[keep] === prompt[keep]) keep++;
    if (seq.nextTokenIndex > keep) await seq.eraseContextTokenRanges([{start: keep, end: seq.nextTokenIndex}]);
    cachedTokens = keep;
    for await (const token of seq.evaluate(prompt.slice(keep), {temperature: 0})) {
      const now = performance.now();
      if (n === 0) {
        tFirst = now;
        promptMs = now - t0;
      }
      tLast = now;
      n++;
      const piece = m.model.detokenize([token]);
      content += piece;
      if (stream && !closed) send(chunk({content: piece.length > 0 ? piece : " "}, null));
      if (n >= maxTokens || closed) break;
    }
  } finally {
    release(m, seq);
  }
  if (closed) return;
  const predictedMs = n > 1 ? tLast - tFirst : 0;
  const timings = {
    prompt_n: prompt.length - cachedTokens, prompt_ms: promptMs,
    prompt_per_token_ms: promptMs / Math.max(1, prompt.length - cachedTokens),
    predicted_n: n, predicted_ms: predictedMs, predicted_per_token_ms: n > 1 ? predictedMs / (n - 1) : 0,
  };
  const u = {prompt_tokens: prompt.length, completion_tokens: n, total_tokens: prompt.length + n,
             prompt_tokens_details: {cached_tokens: cachedTokens}};
  if (stream) {
    const last = chunk({}, "length");
    last.timings = timings;
    send(last);
    if (usage) send({id, object: "chat.completion.chunk", created, model: m.name, choices: [], usage: u});
    res.end("data: [DONE]\n\n");
  } else {
    res.writeHead(200, {"content-type": "application/json", "x-request-id": id});
    res.end(JSON.stringify({id, object: "chat.completion", created, model: m.name,
                            choices: [{index: 0, message: {role: "assistant", content}, finish_reason: "length"}],
                            usage: u, timings}));
  }
}

const server = http.createServer((req, res) => {
  const path = req.url.split("?")[0];
  if (req.method === "GET" && path === "/health") return res.end('{"status":"ok"}');
  if (req.method === "GET" && (path === "/v1/models" || path === "/models")) {
    res.writeHead(200, {"content-type": "application/json"});
    return res.end(JSON.stringify({object: "list", data: [...models.keys()].map((id) => ({id, object: "model"}))}));
  }
  if (req.method !== "POST" || (path !== "/v1/chat/completions" && path !== "/chat/completions"))
    return error(res, 404, `no route ${req.method} ${path}`, "invalid_request_error", "not_found");
  const parts = [];
  req.on("data", (d) => parts.push(d));
  req.on("end", () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(parts).toString("utf8"));
    } catch {
      return error(res, 400, "request body is not JSON", "invalid_request_error", "invalid_json");
    }
    chat(req, res, body).catch((e) => {
      if (!res.headersSent) error(res, 500, String(e), "server_error", "internal");
      else res.end();
    });
  });
});
server.keepAliveTimeout = 5000;
server.listen(port, host, () => console.log(`listening on ${server.address().port}`));
process.on("SIGTERM", () => {
  server.close();
  process.exit(0);
});
