// OpenAI Images with the OpenAI Node SDK and the Vercel AI SDK, unmodified (docs/api.md §2.13):
// `images.generate` (each image's size read from its own PNG header), `images.edit` with two images and a mask
// (PNGs made here with node:zlib), and a stream of partial images. Each charge is checked to the
// nano-unit at the embedded default's gpt-image-2 prices (text in 5, image in 8, image out 30
// per million); and the models priced by the picture (dall-e-3's link, dall-e-2's variation).
// Environment: TOLLGATE_BASE_URL, TOLLGATE_BIN, TOLLGATE_DATABASE_URL.
import OpenAI, { toFile } from "openai";
import { createOpenAI } from "@ai-sdk/openai";
import { generateImage } from "ai";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { deflateSync, crc32 } from "node:zlib";

const cli = (...args) =>
  execFileSync(process.env.TOLLGATE_BIN, [...args, "--database-url", process.env.TOLLGATE_DATABASE_URL], {
    encoding: "utf8",
  });
let accounts = 0;
const newClient = () => {
  const name = `node-images-${process.pid}-${accounts++}`;
  const apiKey = cli("keys", "create", "--name", name, "--balance", "5").trim();
  return new OpenAI({ baseURL: `${process.env.TOLLGATE_BASE_URL}/v1`, apiKey, maxRetries: 0 });
};

// Nano-units, exactly.
const nanos = (count, perMillion) => (BigInt(count) * BigInt(perMillion * 1e6)) / 1000n;
const asNanos = amount => {
  const [whole, fraction = ""] = amount.split(".");
  return BigInt(whole) * 1_000_000_000n + BigInt((fraction + "000000000").slice(0, 9));
};
const textTokens = prompt => Math.ceil(Buffer.byteLength(prompt) / 4);

/** A PNG's width and height, from its IHDR. */
const pngSize = bytes => {
  assert.equal(bytes.subarray(1, 4).toString(), "PNG");
  return [bytes.readUInt32BE(16), bytes.readUInt32BE(20)];
};

/** A real RGBA PNG of one color. */
const png = (width, height, rgba = [200, 30, 60, 255]) => {
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 4).map((_, i) => rgba[i % 4])]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  const chunk = (kind, data) => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(kind), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([head, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 6, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
};

// generate: two 1536x1024 images at high, 5,488 image tokens each.
{
  const client = newClient();
  const prompt = "A glass greenhouse in the snow";
  const { data: answer, response } = await client.images
    .generate({ model: "gpt-image-2", prompt, size: "1536x1024", quality: "high", n: 2 })
    .withResponse();
  assert.equal(answer.data.length, 2);
  for (const image of answer.data) {
    assert.deepEqual(pngSize(Buffer.from(image.b64_json, "base64")), [1536, 1024]);
  }
  assert.equal(answer.usage.output_tokens, 2 * 5_488);
  const expected = nanos(textTokens(prompt), 5) + nanos(2 * 5_488, 30);
  assert.equal(asNanos(response.headers.get("x-tollgate-charge")), expected);
}

// edit: two images and a mask; each input by its size (1024²: 194, 1536x1024: 2 tiles, 323).
{
  const client = newClient();
  const prompt = "Make both of them wear hats";
  const { data: answer, response } = await client.images
    .edit({
      model: "gpt-image-2",
      image: [
        await toFile(png(1024, 1024), "a.png", { type: "image/png" }),
        await toFile(png(1536, 1024), "b.png", { type: "image/png" }),
      ],
      mask: await toFile(png(1024, 1024, [0, 0, 0, 0]), "mask.png", { type: "image/png" }),
      prompt,
      size: "1024x1024",
      quality: "low",
    })
    .withResponse();
  assert.deepEqual(pngSize(Buffer.from(answer.data[0].b64_json, "base64")), [1024, 1024]);
  const expected = nanos(textTokens(prompt), 5) + nanos(194 + 323 + 194, 8) + nanos(196, 30);
  assert.equal(asNanos(response.headers.get("x-tollgate-charge") ?? "0"), expected);
}

// a stream: one partial image, then the image with the usage.
{
  const client = newClient();
  const prompt = "A kite over the dunes";
  const stream = await client.images.generate({
    model: "gpt-image-2",
    prompt,
    size: "1024x1024",
    quality: "medium",
    stream: true,
    partial_images: 1,
  });
  const events = [];
  for await (const event of stream) events.push(event);
  assert.deepEqual(
    events.map(e => e.type),
    ["image_generation.partial_image", "image_generation.completed"],
  );
  for (const event of events) assert.deepEqual(pngSize(Buffer.from(event.b64_json, "base64")), [1024, 1024]);
  assert.equal(events[1].usage.output_tokens, 1_756 + 100);
}

// The Vercel AI SDK's generateImage through its OpenAI provider: two 1024x1024 images at low
// (196 image tokens each, providerOptions.openai.quality), b64_json asked for by the SDK.
{
  const name = `node-images-${process.pid}-${accounts++}`;
  const apiKey = cli("keys", "create", "--name", name, "--balance", "5").trim();
  const provider = createOpenAI({ baseURL: `${process.env.TOLLGATE_BASE_URL}/v1`, apiKey });
  const prompt = "A red fox asleep in the snow";
  const { images, responses } = await generateImage({
    model: provider.image("gpt-image-2"),
    prompt,
    n: 2,
    size: "1024x1024",
    providerOptions: { openai: { quality: "low" } },
    maxRetries: 0,
  });
  assert.equal(images.length, 2);
  for (const image of images) assert.deepEqual(pngSize(Buffer.from(image.uint8Array)), [1024, 1024]);
  const expected = nanos(textTokens(prompt), 5) + nanos(2 * 196, 30);
  assert.equal(asNanos(responses[0].headers["x-tollgate-charge"]), expected);
}

// dall-e-3 priced by the picture, answered by the gateway's own signed link (its default):
// fetched with no key, a 1024x1792 PNG, charged the table's 1024x1792 row (0.08).
{
  const client = newClient();
  const { data: answer, response } = await client.images
    .generate({ model: "dall-e-3", prompt: "A tall lighthouse", size: "1024x1792" })
    .withResponse();
  const [image] = answer.data;
  assert.equal(image.b64_json, undefined);
  assert.ok(image.url.startsWith(`${process.env.TOLLGATE_BASE_URL}/v1/media/images/img_`), image.url);
  const fetched = await fetch(image.url);
  assert.equal(fetched.status, 200);
  assert.equal(fetched.headers.get("content-type"), "image/png");
  assert.deepEqual(pngSize(Buffer.from(await fetched.arrayBuffer())), [1024, 1792]);
  assert.equal(asNanos(response.headers.get("x-tollgate-charge")), 80_000_000n);
}

// dall-e-2's variation of one square PNG: two at 512x512, 0.018 each.
{
  const client = newClient();
  const { data: answer, response } = await client.images
    .createVariation({
      model: "dall-e-2",
      image: await toFile(png(256, 256), "a.png", { type: "image/png" }),
      n: 2,
      size: "512x512",
      response_format: "b64_json",
    })
    .withResponse();
  assert.equal(answer.data.length, 2);
  for (const image of answer.data) assert.deepEqual(pngSize(Buffer.from(image.b64_json, "base64")), [512, 512]);
  assert.equal(asNanos(response.headers.get("x-tollgate-charge")), 36_000_000n);
}

console.log(
  "images.test.mjs: generate, edit and stream charged to the nano-unit; the AI SDK's generateImage too; dall-e by the picture, by link and varied",
);
