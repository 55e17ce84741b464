//! # tollgate-sim
//!
//! Simulated vendors: the upstream that `cargo run --release` talks to out of the box, and the
//! test double of every end-to-end test. It speaks the vendors' formats (the same protocol crates
//! the gateway uses) over real HTTP on a loopback port, with deterministic output.
//!
//! Formats so far: `openai-embeddings` (`POST /v1/embeddings`), `t2a` (`POST /v1/t2a_v2`,
//! real audio from [`audio`]), `stt` (`POST /v1/speech_to_text`, a multipart upload probed
//! for its real duration; the text that [`audio`] embedded comes back exactly), and the
//! asynchronous video tasks: `clip-tasks` (Ark-style, `POST`/`GET`
//! `/api/v3/contents/generations/tasks`, `GET`/`DELETE …/tasks/{id}`) and `generic-tasks`
//! (`POST /v1/video/generations`, `GET /v1/video/generations/{id}`), which move from queued to
//! running to finished on a clock set by the knobs (`[fail]` and `[expire]` in the prompt pick
//! the ending) and finish with real MP4 files from [`video`] at `GET /_sim/videos/{id}.mp4`;
//! and `genai`, the native text-generation vendor (wire-formats §6, models `gen-2.0-flash`,
//! `gen-2.5-flash`, `gen-2.5-flash-lite`, `gen-2.5-pro`, `gen-3-pro-preview`), under `/v1beta`
//! and `/v1`: `POST …/models/{model}:generateContent`, `…:streamGenerateContent` (CRLF-framed
//! SSE with `?alt=sse`, else one streamed JSON array), `…:countTokens`, `GET …/models` and
//! `GET …/models/{model}`, keyed by `x-goog-api-key` or `?key=`. Answers and token counts are
//! deterministic (1 token per 4 UTF-8 bytes of text, 258 per media part); models of generation
//! 2.5 and later think by default; `[call]` in the prompt with declared functions answers with a
//! function call. The last body those routes received is served byte for byte at
//! `GET /_sim/genai/last-request`.
//!
//! ## Knobs
//!
//! [`Knobs`] inject what tests and benchmarks need: added latency, error statuses (always, or for
//! the next N requests), a stall that never answers (for timeouts), and for streams the pause
//! between frames, a cut after N frames and an error frame after N frames, and for video tasks the
//! queued and running times and a failure of every Nth task. They can be changed while
//! the simulator runs, in process ([`SimHandle::knobs`]) or over HTTP:
//!
//! * `GET /_sim/knobs`, `PUT /_sim/knobs` with a JSON [`KnobSettings`] — read or replace them;
//! * `GET /_sim/stats` — requests served per route, so a test can prove that a rejected request
//!   never reached the upstream.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod audio;
mod embeddings;
mod fetch;
mod gemini_live;
mod genai;
mod images;
mod knobs;
mod lies;
mod openai_audio;
mod realtime;
mod server;
mod stripe;
mod stt;
mod t2a;
mod tasks;
pub mod video;

pub use knobs::{KnobSettings, Knobs};
pub use server::{SimHandle, start};
pub use stripe::{Attempt as StripeAttempt, DECLINED_CARD, StripeKnobs, WEBHOOK_SECRET};
