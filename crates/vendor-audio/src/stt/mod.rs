//! Speech recognition in the vendor format: `POST /v1/speech_to_text` (docs/api.md §2.5, §4.4, §6, §8;
//! wire-formats §4, MiniMax's ASR API).
//!
//! # Request
//!
//! A `multipart/form-data` body and one optional header. The gateway reads the multipart stream
//! and hands the text parts to [`SttParams::from_fields`] with the header's value.
//!
//! | Part | Type | Rules |
//! |---|---|---|
//! | `language` **header** ([`LANGUAGE_HEADER`]) | string | optional hint (`zh`, `en`, `ja`, ...); detected when absent. A `language` *form field* is accepted and ignored |
//! | `model` | string | required, `asr-1.0` ([`MODEL`]) |
//! | `file` | file | one of [`ACCEPTED_CONTAINERS`]; at most [`MAX_FILE_BYTES`] bytes and [`MAX_SECONDS`] seconds (the limits of docs/api.md §2.2) |
//! | `response_format` | [`SttFormat`] | `json` (default), `verbose_json`, `srt`, `vtt` |
//! | `timestamp_level` | [`TimestampLevel`] | `sentence` (default) or `word`; ignored for `json` |
//! | `stream` | boolean | SSE frames; only with `json` |
//!
//! Unknown fields are ignored. [`validate`] checks the rules between the fields.
//! [`SttParams::to_fields`] gives the form fields to send upstream, in order, and
//! [`SttParams::language`] the header.
//!
//! # Response
//!
//! | `response_format` | Body |
//! |---|---|
//! | `json` | [`SttJson`]: `text`, `duration` (seconds, the billed quantity), `trace_id` |
//! | `verbose_json` | [`SttVerboseJson`]: adds `n_speakers` and `segments` ([`SttSegment`]: `id`, `start`, `end`, `text`, `speaker` `"0"`, `"1"`, ...; [`SttWord`]s with `timestamp_level: word`, an assumed shape) |
//! | `srt`, `vtt` | the subtitle document as the raw body; no type here |
//!
//! With `stream: true` the body is SSE: one [`SttStreamFrame`] per `data:` line, the last with
//! `finish: true` and the `duration`. Errors are OpenAI-style [`SttError`]s with a real HTTP
//! status, not [`BaseResp`](crate::BaseResp) envelopes.
//!
//! # Example
//!
//! ```
//! use tollgate_vendor_audio::stt::{
//!     validate, SttError, SttFormat, SttParams, SttStreamFrame, SttVerboseJson, MODEL,
//! };
//! use tollgate_vendor_audio::Rule;
//!
//! let params = SttParams::from_fields(
//!     [("model", "asr-1.0"), ("response_format", "verbose_json"), ("timestamp_level", "sentence")],
//!     Some("en"),
//! )?;
//! validate(&params)?;
//! assert_eq!(params.model, MODEL);
//! assert_eq!(params.language.as_deref(), Some("en"));
//!
//! // The upstream's answer (wire-formats §4).
//! let body: SttVerboseJson = serde_json::from_str(r#"{"text":"Hi all. Let's start.","duration":3.4,"n_speakers":1,
//!   "segments":[{"id":0,"start":0.2,"end":1.1,"text":"Hi all.","speaker":"0"},
//!               {"id":1,"start":1.3,"end":2.6,"text":"Let's start.","speaker":"0"}]}"#)?;
//! assert_eq!(body.segments[1].text, "Let's start.");
//!
//! // A stream: text frames, then the final frame with the duration.
//! let frames = [
//!     r#"{"index":0,"delta":"Hi all."}"#,
//!     r#"{"index":1,"delta":" Let's start."}"#,
//!     r#"{"index":2,"delta":"","finish":true,"duration":3.4}"#,
//! ];
//! let mut text = String::new();
//! let mut duration = None;
//! for data in frames {
//!     if let Some(frame) = SttStreamFrame::parse(data)? {
//!         text.push_str(&frame.delta);
//!         if frame.is_final() {
//!             duration = frame.duration;
//!         }
//!     }
//! }
//! assert_eq!((text.as_str(), duration), ("Hi all. Let's start.", Some(3.4)));
//!
//! // Streaming works with json only; the refusal is an OpenAI-style error body.
//! let srt_stream = SttParams::from_fields(
//!     [("model", "asr-1.0"), ("response_format", "srt"), ("stream", "true")],
//!     None,
//! )?;
//! let err = validate(&srt_stream).unwrap_err();
//! assert_eq!((err.field.as_str(), err.rule), ("stream", Rule::NotStreamable));
//! assert_eq!(SttError::from(&err).error.param.as_deref(), Some("stream"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error_body;
mod request;
mod response;
mod stream;

pub use error_body::{INVALID_REQUEST_ERROR, SttError, SttErrorDetail};
pub use request::{
    ACCEPTED_CONTAINERS, LANGUAGE_HEADER, MAX_FILE_BYTES, MAX_SECONDS, MODEL, SttFormat, SttParams,
    TimestampLevel, validate,
};
pub use response::{SttJson, SttSegment, SttVerboseJson, SttWord};
pub use stream::{DONE_SENTINEL, SttStreamFrame};
