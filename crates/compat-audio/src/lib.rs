//! # tollgate-compat-audio
//!
//! The OpenAI-compatible audio wire format, sans-IO: the speech request of SPEC §2.1
//! (`POST /v1/audio/speech`: `model` with its aliases, `input` ≤ 10,000 characters and ≤ 2,000
//! for `wav`/`flac`/`pcm`, `voice`, `response_format`, `speed` 0.5–2.0, `stream_format`) and
//! the transcription request and responses of SPEC §2.2–2.3 (`/v1/audio/transcriptions`:
//! `json`, `verbose_json`, `srt`, `vtt`, `text`, and the `transcript.text.*` stream events).
//!
//! This crate describes the format and nothing else:
//!
//! - [`speech`]: the speech request [`SpeechRequest`] with its [`Voice`], [`ResponseFormat`]
//!   (and the [`AudioFormat`] actually served) and [`StreamFormat`]; the limits and
//!   [`speech::validate`]; the default model aliases; and the [`SpeechStreamEvent`]s of
//!   `stream_format: "sse"`.
//! - [`error`]: [`FieldError`] and [`Rule`], the field-level errors shared by the resources.
//!   Their parts map onto an OpenAI error body (wire-formats §1.3): `param` is the field, `code`
//!   the rule's code.
//!
//! The transcription part (SPEC §2.2–2.3) is a later issue; it will be a `transcription` module
//! next to [`speech`], reusing [`error`]. Until it arrives the gateway answers
//! `/v1/audio/transcriptions` with 501 in OpenAI's error shape.
//!
//! Every type both serializes and deserializes, so a Rust client can reuse them. Validation is a
//! plain function per resource (`speech::validate`), not re-exported at the root, so that the
//! resources' checks keep distinct names.
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
//! # Ok::<(), serde_json::Error>(())
//! ```

pub mod error;
pub mod speech;

pub use error::{FieldError, Rule};
pub use speech::{
    AudioFormat, ResponseFormat, SpeechRequest, SpeechStreamEvent, SpeechUsage, StreamFormat, Voice,
};
