// Live voice sessions with the vendors' own Node SDKs, unmodified (docs/api.md §2.11, §2.12):
// @google/genai's `ai.live.connect` on the Gemini Live socket (audio both ways, text, a tool
// call), and the OpenAI SDK's `OpenAIRealtimeWS` on /v1/realtime (over the TLS listener: it only
// speaks wss://). Each turn or response is charged its usage priced here at the embedded
// default's prices, to the nano-unit. Environment: TOLLGATE_BASE_URL, TOLLGATE_TLS_URL,
// TOLLGATE_BIN, TOLLGATE_DATABASE_URL (NODE_EXTRA_CA_CERTS trusts the TLS listener).
import { GoogleGenAI, Modality } from "@google/genai";
import OpenAI from "openai";
import { OpenAIRealtimeWS } from "openai/realtime/ws";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";

const cli = (...args) =>
  execFileSync(process.env.TOLLGATE_BIN, [...args, "--database-url", process.env.TOLLGATE_DATABASE_URL], {
    encoding: "utf8",
  });
let accounts = 0;
const newAccount = () => {
  const name = `node-live-${process.pid}-${accounts++}`;
  return { name, key: cli("keys", "create", "--name", name, "--balance", "5").trim() };
};
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

// Nano-units, exactly: per-million prices times counts, in integers.
const nanos = (count, perMillion) => (BigInt(count) * BigInt(Math.round(perMillion * 1e6))) / 1000n;
const asNanos = amount => {
  const [whole, fraction = ""] = amount.replace("-", "").split(".");
  return BigInt(whole) * 1_000_000_000n + BigInt((fraction + "000000000").slice(0, 9));
};

/** The account's charges of `model`, once no hold is left. */
async function charges(name, model) {
  const held = () => Number(JSON.parse(cli("keys", "show", name, "--json")).held);
  for (let i = 0; i < 200 && held() !== 0; i++) await sleep(50);
  assert.equal(held(), 0, "the session's hold stayed");
  const rows = JSON.parse(cli("keys", "ledger", name, "--json")).rows;
  return rows.filter(r => r.kind === "charge" && r.model === model).map(r => asNanos(r.amount));
}

// ---- @google/genai: Gemini Live ----

// gemini-live-2.5-flash's prices per million: text and audio in, text and audio out.
const GEMINI_IN = { TEXT: 0.5, AUDIO: 3, IMAGE: 3 };
const GEMINI_OUT = { TEXT: 2, AUDIO: 12 };
const geminiPrice = usage =>
  (usage.promptTokensDetails ?? []).reduce((s, d) => s + nanos(d.tokenCount ?? 0, GEMINI_IN[d.modality]), 0n) +
  (usage.responseTokensDetails ?? []).reduce((s, d) => s + nanos(d.tokenCount ?? 0, GEMINI_OUT[d.modality]), 0n) +
  nanos(usage.thoughtsTokenCount ?? 0, GEMINI_OUT.TEXT);

/** Two seconds of a 440 Hz tone as 16 kHz PCM16, base64. */
function tone(seconds) {
  const pcm = Buffer.alloc(seconds * 16_000 * 2);
  for (let i = 0; i < seconds * 16_000; i++) pcm.writeInt16LE(Math.round(Math.sin((i / 16_000) * 440 * 2 * Math.PI) * 8000), i * 2);
  return pcm;
}

{
  const { name, key } = newAccount();
  const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: process.env.TOLLGATE_BASE_URL } });
  const messages = [];
  let waiting = null;
  const next = until =>
    new Promise(resolve => {
      waiting = { until, resolve };
      check();
    });
  const check = () => {
    const at = waiting ? messages.findIndex(waiting.until) : -1;
    if (at >= 0) {
      const { resolve } = waiting;
      waiting = null;
      resolve(messages.splice(0, at + 1));
    }
  };
  const session = await ai.live.connect({
    model: "gemini-live-2.5-flash",
    config: {
      responseModalities: [Modality.AUDIO],
      tools: [{ functionDeclarations: [{ name: "turn_on_the_lights", description: "Turns the lights on." }] }],
    },
    callbacks: {
      onmessage: m => {
        messages.push(m);
        check();
      },
      onerror: e => console.error("live error", e),
    },
  });
  const claims = [];
  // A spoken turn: audio in, audio back.
  const voice = tone(2);
  for (let at = 0; at < voice.length; at += 3_200) {
    session.sendRealtimeInput({ audio: { data: voice.subarray(at, at + 3_200).toString("base64"), mimeType: "audio/pcm;rate=16000" } });
  }
  session.sendRealtimeInput({ audioStreamEnd: true });
  let turn = await next(m => m.usageMetadata);
  const audio = turn.flatMap(m => m.serverContent?.modelTurn?.parts ?? []).reduce((n, p) => n + Buffer.from(p.inlineData?.data ?? "", "base64").length, 0);
  assert.ok(audio > 48_000, `a second of voice or more: ${audio} bytes`);
  claims.push(geminiPrice(turn.at(-1).usageMetadata));
  // A text turn naming the tool: the call, answered.
  session.sendClientContent({ turns: [{ role: "user", parts: [{ text: "Please turn_on_the_lights." }] }], turnComplete: true });
  turn = await next(m => m.usageMetadata);
  const call = turn.find(m => m.toolCall)?.toolCall.functionCalls[0];
  assert.equal(call?.name, "turn_on_the_lights");
  claims.push(geminiPrice(turn.at(-1).usageMetadata));
  session.sendToolResponse({ functionResponses: [{ id: call.id, name: call.name, response: { result: "on" } }] });
  turn = await next(m => m.usageMetadata);
  claims.push(geminiPrice(turn.at(-1).usageMetadata));
  session.close();
  assert.deepEqual((await charges(name, "gemini-live-2.5-flash")).sort(), claims.sort());
  console.log("@google/genai live: 3 turns charged to the nano-unit");
}

// ---- @google/genai: an ephemeral token, minted by a server, spent by a browser's session ----

{
  const { name, key } = newAccount();
  const server = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: process.env.TOLLGATE_BASE_URL, apiVersion: "v1alpha" } });
  const token = await server.authTokens.create({
    config: {
      uses: 1,
      liveConnectConstraints: { model: "gemini-live-2.5-flash", config: { responseModalities: [Modality.TEXT] } },
    },
  });
  assert.ok(token.name.startsWith("auth_tokens/"), token.name);
  const ask = async () => {
    const browser = new GoogleGenAI({ apiKey: token.name, httpOptions: { baseUrl: process.env.TOLLGATE_BASE_URL, apiVersion: "v1alpha" } });
    const messages = [];
    let closed = null;
    const session = await browser.live.connect({
      model: "gemini-live-2.5-flash",
      callbacks: { onmessage: m => messages.push(m), onclose: e => (closed = e), onerror: () => {} },
    });
    session.sendClientContent({ turns: [{ role: "user", parts: [{ text: "Say hello." }] }], turnComplete: true });
    for (let i = 0; i < 200 && !messages.some(m => m.usageMetadata) && !closed; i++) await sleep(25);
    session.close();
    return { messages, closed };
  };
  const { messages } = await ask();
  const usage = messages.find(m => m.usageMetadata)?.usageMetadata;
  assert.ok(usage, "the token's session was answered");
  assert.deepEqual(await charges(name, "gemini-live-2.5-flash"), [geminiPrice(usage)]);
  // Spent: the second connection is refused.
  await assert.rejects(ask());
  console.log("@google/genai: an ephemeral token opened one session, billed to its key");
}

// ---- openai: Realtime over wss ----

const REALTIME = { text_in: 4, cached_text_in: 0.4, audio_in: 32, cached_audio_in: 0.4, text_out: 16, audio_out: 64 };
const realtimePrice = u => {
  const i = u.input_token_details, c = i.cached_tokens_details ?? {}, o = u.output_token_details;
  return (
    nanos(i.text_tokens - (c.text_tokens ?? 0), REALTIME.text_in) + nanos(c.text_tokens ?? 0, REALTIME.cached_text_in) +
    nanos(i.audio_tokens - (c.audio_tokens ?? 0), REALTIME.audio_in) + nanos(c.audio_tokens ?? 0, REALTIME.cached_audio_in) +
    nanos(o.text_tokens, REALTIME.text_out) + nanos(o.audio_tokens, REALTIME.audio_out)
  );
};

{
  const { name, key } = newAccount();
  const client = new OpenAI({ baseURL: process.env.TOLLGATE_TLS_URL + "/v1", apiKey: key, maxRetries: 0 });
  const rt = new OpenAIRealtimeWS({ model: "gpt-realtime" }, client);
  const events = [];
  rt.on("event", e => events.push(e));
  rt.on("error", e => assert.fail(`realtime error: ${JSON.stringify(e.error ?? e.message)}`));
  const done = () =>
    new Promise(resolve => {
      const poll = () => (events.some(e => e.type === "response.done") ? resolve() : setTimeout(poll, 10));
      poll();
    });
  await new Promise(resolve => rt.socket.on("open", resolve));
  // 24 kHz PCM16: the tone resampled by repetition is enough to be heard and counted.
  const voice = Buffer.alloc(48_000 * 2);
  for (let at = 0; at < voice.length; at += 9_600) rt.send({ type: "input_audio_buffer.append", audio: voice.subarray(at, at + 9_600).toString("base64") });
  rt.send({ type: "input_audio_buffer.commit" });
  rt.send({ type: "response.create" });
  await done();
  const created = events.find(e => e.type === "session.created");
  assert.equal(created.session.model, "gpt-realtime");
  const response = events.find(e => e.type === "response.done").response;
  const audio = events.filter(e => e.type === "response.output_audio.delta").reduce((n, e) => n + Buffer.from(e.delta, "base64").length, 0);
  assert.ok(audio > 48_000, `a second of voice or more: ${audio} bytes`);
  rt.close();
  assert.deepEqual(await charges(name, "gpt-realtime"), [realtimePrice(response.usage)]);
  console.log("openai OpenAIRealtimeWS: a response charged to the nano-unit, over wss");
}
process.exit(0);
