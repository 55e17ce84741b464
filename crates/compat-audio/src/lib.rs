//! # tollgate-compat-audio
//!
//! The OpenAI-compatible audio wire format, sans-IO: the speech request of SPEC §2.1
//! (`POST /v1/audio/speech`: `model` with its aliases, `input` ≤ 10,000 characters and ≤ 2,000
//! for `wav`/`flac`/`pcm`, `voice`, `response_format`, `speed` 0.5–2.0, `stream_format`) and
//! the transcription request and responses of SPEC §2.2–2.3 (`/v1/audio/transcriptions`:
//! `json`, `verbose_json`, `srt`, `vtt`, `text`, and the `transcript.text.*` stream events).
//!
//! Status: the types arrive with the speech-synthesis and speech-recognition work; until then the
//! gateway answers these endpoints with 501 in OpenAI's error shape.
