//! # tollgate-compat-audio
//!
//! The OpenAI-compatible audio wire format, sans-IO: the speech request of docs/api.md §2.1
//! (`POST /v1/audio/speech`: `model` with its aliases, `input` ≤ 10,000 characters and ≤ 2,000
//! for `wav`/`flac`/`pcm`, `voice`, `response_format`, `speed` 0.5–2.0, `stream_format`) and
//! the transcription request and responses of docs/api.md §2.2–2.3 (`/v1/audio/transcriptions`:
//! `json`, `verbose_json`, `srt`, `vtt`, `text`, and the `transcript.text.*` stream events).
//!
//! This crate describes the format and nothing else:
//!
//! - [`speech`]: the speech request [`SpeechRequest`] with its [`Voice`], [`ResponseFormat`]
//!   (and the [`AudioFormat`] actually served) and [`StreamFormat`]; the limits and
//!   [`speech::validate`]; the default model aliases; and the [`SpeechStreamEvent`]s of
//!   `stream_format: "sse"`.
//! - [`transcription`]: the form fields of a transcription request, parsed into
//!   [`TranscriptionParams`] (with [`TranscriptionFormat`] and [`Granularity`]), the file's
//!   formats and limits, [`transcription::validate`], the default model aliases; the recognised
//!   [`Transcript`] and its renderings as `json`, `verbose_json`, `srt`, `vtt` and `text`, with
//!   word timestamps from sentence timestamps ([`transcription::split_words`]) and the language
//!   names of `verbose_json`; and the [`TranscriptionStreamEvent`]s of `stream: true`.
//! - [`error`]: [`FieldError`] and [`Rule`], the field-level errors shared by the resources.
//!   Their parts map onto an OpenAI error body (wire-formats §1.3): `param` is the field, `code`
//!   the rule's code.
//!
//! Every wire type both serializes and deserializes, so a Rust client can reuse them. Validation
//! is a plain function per resource (`speech::validate`, `transcription::validate`), not
//! re-exported at the root, so that the resources' checks keep distinct names. The multipart
//! parsing of a transcription request is the gateway's: it hands the text parts over as
//! `(name, value)` pairs.
//!
//! # Example
//!
//! ```
//! use tollgate_compat_audio::speech::{self, SpeechRequest};
//! use tollgate_compat_audio::Rule;
//!
//! let body = r#"{"model": "tts-1", "input": "", "voice": "alloy"}"#;
//! let request: SpeechRequest = serde_json::from_str(body)?;
//! let err = speech::validate(&request).unwrap_err();
//! assert_eq!((err.field.as_str(), err.rule), ("input", Rule::Required));
//!
//! let params = tollgate_compat_audio::TranscriptionParams::from_fields([
//!     ("model", "whisper-1"),
//!     ("response_format", "srt"),
//!     ("stream", "true"),
//! ])?;
//! let err = tollgate_compat_audio::transcription::validate(&params).unwrap_err();
//! assert_eq!((err.field.as_str(), err.rule), ("stream", Rule::NotStreamable));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod error;
pub mod speech;
pub mod transcription;

pub use error::{FieldError, Rule};
pub use speech::{
    AudioFormat, ResponseFormat, SpeechRequest, SpeechStreamEvent, SpeechUsage, StreamFormat, Voice,
};
pub use transcription::{
    Granularity, Transcript, TranscriptionFormat, TranscriptionParams, TranscriptionStreamEvent,
};
