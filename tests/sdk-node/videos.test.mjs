// The OpenAI Node SDK, unmodified, on tollgate's /v1/videos (docs/api.md §2.8.1): create, poll
// (retrieve, waiting what openai-poll-after-ms says), download (the video, and a Sora-style
// channel's thumbnail and spritesheet), list, remix, delete, and a refusal naming its field. Environment: TOLLGATE_BASE_URL, TOLLGATE_KEY.
import OpenAI from "openai";
import assert from "node:assert/strict";

const client = new OpenAI({
  baseURL: process.env.TOLLGATE_BASE_URL + "/v1",
  apiKey: process.env.TOLLGATE_KEY,
  maxRetries: 0,
});
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

async function poll(id) {
  for (let i = 0; i < 60; i++) {
    const { data, response } = await client.videos.retrieve(id).withResponse();
    if (data.status === "completed" || data.status === "failed") return data;
    await sleep(Number(response.headers.get("openai-poll-after-ms") || 1000));
  }
  throw new Error(`video ${id} never finished`);
}

// The length of an MP4 from its movie header (mvhd: version 0 or 1).
function mp4Seconds(buf) {
  const at = buf.indexOf("mvhd");
  assert.ok(at > 0, "no mvhd box");
  const version = buf[at + 4];
  const timescale = version === 1 ? buf.readUInt32BE(at + 24) : buf.readUInt32BE(at + 16);
  const duration = version === 1 ? Number(buf.readBigUInt64BE(at + 28)) : buf.readUInt32BE(at + 20);
  return duration / timescale;
}

const created = await client.videos.create({
  model: "wave-3-0-video",
  prompt: "A lighthouse at dusk, from Node.",
  seconds: "4",
  size: "854x480",
});
assert.equal(created.status, "queued");
const video = await poll(created.id);
assert.equal(video.status, "completed", JSON.stringify(video));
assert.deepEqual([video.seconds, video.size, video.progress], ["4", "854x480", 100]);

const content = await client.videos.downloadContent(video.id);
const file = Buffer.from(await content.arrayBuffer());
assert.equal(file.subarray(4, 8).toString("latin1"), "ftyp");
assert.ok(Math.abs(mp4Seconds(file) - 4) < 0.1, `the MP4 lasts ${mp4Seconds(file)} s`);

const page = await client.videos.list({ limit: 10 });
assert.ok(page.data.some(v => v.id === video.id));

const remix = await client.videos.remix(video.id, { prompt: "The lighthouse at dawn." });
assert.equal(remix.remixed_from_video_id, video.id);
assert.equal((await poll(remix.id)).status, "completed");

const deleted = await client.videos.delete(video.id);
assert.deepEqual([deleted.id, deleted.deleted], [video.id, true]);
await assert.rejects(client.videos.retrieve(video.id), e => e.status === 404);

await assert.rejects(
  client.videos.create({ model: "wave-3-0-video", prompt: "x", size: "1280x720" }),
  e => e.status === 400 && e.param === "size",
);
// What no model here can do: a 400 the SDK does not retry.
await assert.rejects(
  client.videos.edit({ prompt: "x", video: { id: video.id } }),
  e => e.status === 400 && e.code === "unsupported_operation",
);
// A Sora-style channel's video (docs/api.md §2.8.1): the SDK's default model, size and length,
// and its thumbnail and spritesheet beside the MP4.
const sora = await poll((await client.videos.create({ prompt: "A paper crane, from Node." })).id);
assert.deepEqual([sora.status, sora.model, sora.seconds, sora.size], ["completed", "sora-2", "4", "720x1280"]);
const thumbnail = await client.videos.downloadContent(sora.id, { variant: "thumbnail" });
assert.equal(thumbnail.headers.get("content-type"), "image/webp");
const still = Buffer.from(await thumbnail.arrayBuffer());
assert.deepEqual([still.subarray(0, 4).toString("latin1"), still.subarray(8, 12).toString("latin1")], ["RIFF", "WEBP"]);
const sheet = Buffer.from(await (await client.videos.downloadContent(sora.id, { variant: "spritesheet" })).arrayBuffer());
assert.deepEqual([...sheet.subarray(0, 3)], [0xff, 0xd8, 0xff]);
console.log("node sdk: videos created, polled, downloaded, listed, remixed, deleted; a bad size and an edit refused; a sora-2 video with its stills");
