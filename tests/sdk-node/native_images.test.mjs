// The native family's image output with @google/genai, unmodified (docs/api.md §2.9, §8 rule
// 10): `generateContent` and `generateContentStream` on the embedded default's image models,
// each image's sides read from its own PNG header, each charge checked to the nano-unit from the
// usage the client saw — text at the text prices, the image at the image-out price
// (gen-2.5-flash-image: 0.30, 2.50 and 30 per million; gen-3-pro-image-preview: 2, 12, 120).
// Environment: TOLLGATE_BASE_URL, TOLLGATE_BIN, TOLLGATE_DATABASE_URL.
import { GoogleGenAI, Modality } from "@google/genai";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";

const cli = (...args) =>
  execFileSync(process.env.TOLLGATE_BIN, [...args, "--database-url", process.env.TOLLGATE_DATABASE_URL], {
    encoding: "utf8",
  });
let accounts = 0;
const newClient = () => {
  const name = `node-native-images-${process.pid}-${accounts++}`;
  const apiKey = cli("keys", "create", "--name", name, "--balance", "5").trim();
  return { name, ai: new GoogleGenAI({ apiKey, httpOptions: { baseUrl: process.env.TOLLGATE_BASE_URL } }) };
};
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

const asNanos = amount => {
  const [whole, fraction = ""] = amount.replace("-", "").split(".");
  return BigInt(whole) * 1_000_000_000n + BigInt((fraction + "000000000").slice(0, 9));
};

/** What the account was charged, once no hold is left. */
async function charged(name) {
  const held = () => Number(JSON.parse(cli("keys", "show", name, "--json")).held);
  for (let i = 0; i < 200 && held() !== 0; i++) await sleep(50);
  assert.equal(held(), 0, "a hold stayed");
  const rows = JSON.parse(cli("keys", "ledger", name, "--json")).rows;
  return rows.filter(r => r.kind === "charge").reduce((sum, r) => sum + asNanos(r.amount), 0n);
}

// Prices in nano-units a token (a price per million × 1,000).
const PRICES = {
  "gen-2.5-flash-image": { textIn: 300n, textOut: 2_500n, imageOut: 30_000n },
  "gen-3-pro-image-preview": { textIn: 2_000n, textOut: 12_000n, imageOut: 120_000n },
};
const byModality = (details, modality) =>
  (details ?? []).filter(d => d.modality === modality).reduce((s, d) => s + (d.tokenCount ?? 0), 0);
const charge = (model, usage) => {
  const p = PRICES[model];
  const images = byModality(usage.candidatesTokensDetails, "IMAGE");
  const text = (usage.candidatesTokenCount ?? 0) - images + (usage.thoughtsTokenCount ?? 0);
  return BigInt(usage.promptTokenCount) * p.textIn + BigInt(text) * p.textOut + BigInt(images) * p.imageOut;
};
const pngSize = b64 => {
  const bytes = Buffer.from(b64, "base64");
  assert.equal(bytes.subarray(1, 4).toString(), "PNG");
  return [bytes.readUInt32BE(16), bytes.readUInt32BE(20)];
};
const pictures = parts => (parts ?? []).filter(p => p.inlineData).map(p => pngSize(p.inlineData.data));

// generateContent: one 3:2 picture (1248x832), its 1,290 tokens at the image price.
{
  const { name, ai } = newClient();
  const model = "gen-2.5-flash-image";
  const answer = await ai.models.generateContent({
    model,
    contents: "A lighthouse at dusk",
    config: { responseModalities: [Modality.TEXT, Modality.IMAGE], imageConfig: { aspectRatio: "3:2" } },
  });
  assert.deepEqual(pictures(answer.candidates[0].content.parts), [[1248, 832]]);
  assert.equal(byModality(answer.usageMetadata.candidatesTokensDetails, "IMAGE"), 1290);
  assert.equal(await charged(name), charge(model, answer.usageMetadata));
  console.log("ok generateContent draws the ratio asked and charges the image price");
}

// generateContentStream: a 2K picture of gen-3-pro-image, whole in one event, 1,120 tokens.
{
  const { name, ai } = newClient();
  const model = "gen-3-pro-image-preview";
  const drawn = [];
  let usage;
  for await (const chunk of await ai.models.generateContentStream({
    model,
    contents: "A windmill in the rain",
    config: { imageConfig: { aspectRatio: "9:16", imageSize: "2K" } },
  })) {
    drawn.push(...pictures(chunk.candidates?.[0]?.content?.parts));
    usage = chunk.usageMetadata ?? usage;
  }
  assert.deepEqual(drawn, [[1536, 2752]]);
  assert.equal(byModality(usage.candidatesTokensDetails, "IMAGE"), 1120);
  assert.equal(await charged(name), charge(model, usage));
  console.log("ok a stream relays the picture whole and charges as the answer");
}

// A text model asked for images: the vendor's 400 naming the field, nothing charged.
{
  const { name, ai } = newClient();
  await assert.rejects(
    ai.models.generateContent({ model: "gen-2.5-flash", contents: "A cat", config: { responseModalities: [Modality.IMAGE] } }),
    e => e.status === 400 && /responseModalities/.test(e.message),
  );
  assert.equal(await charged(name), 0n);
  console.log("ok images asked of a text model are refused and cost nothing");
}
