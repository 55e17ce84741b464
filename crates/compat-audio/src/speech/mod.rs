//! Speech synthesis in the OpenAI-compatible format: `POST /v1/audio/speech` (docs/api.md §2.1, §4.1,
//! §8; wire-formats §1.1).
//!
//! # Request
//!
//! A JSON [`SpeechRequest`]:
//!
//! | Field | Type | Rules |
//! |---|---|---|
//! | `model` | string | required; a speech model (`speech-2.8-hd`, `speech-2.8-turbo`, `speech-2.6-hd`, ...) or an alias, see [`DEFAULT_ALIASES`] |
//! | `input` | string | required; at most [`MAX_INPUT_CHARS`] characters, at most [`MAX_INPUT_CHARS_UNCOMPRESSED`] when the served format is `wav`, `flac` or `pcm` |
//! | `voice` | string or `{"id": "voice_..."}` | required, see [`Voice`]; a stock name ([`STOCK_VOICES`]) selects the default English voice |
//! | `instructions` | string | at most [`MAX_INSTRUCTIONS_CHARS`] characters |
//! | `response_format` | [`ResponseFormat`] | `mp3` (default), `opus`, `aac`, `flac`, `wav`, `pcm`; opus and aac are served as mp3 |
//! | `speed` | number | within [`SPEED_RANGE`], 0.5 to 2.0 |
//! | `stream_format` | [`StreamFormat`] | `audio` (default) or `sse` |
//!
//! Where docs/api.md §2.1 and OpenAI's own limits differ (OpenAI: `input` at most 4096 characters,
//! `speed` 0.25 to 4.0), the specification wins.
//!
//! **Unknown fields are ignored.** OpenAI's schema sets `additionalProperties: false`, but the
//! official SDKs add fields over time; refusing them would break clients for no benefit.
//! Decoding checks types (an unknown `response_format` is a decode error); [`validate`] checks
//! the values and names the field and the [`Rule`](crate::Rule) of the first one that is wrong.
//!
//! # Response
//!
//! With `stream_format: "audio"` the body is the audio itself in the [`AudioFormat`] given by
//! [`ResponseFormat::served`], with its [`AudioFormat::content_type`]. With `"sse"` it is a
//! stream of [`SpeechStreamEvent`]s.
//!
//! # Example
//!
//! ```
//! use tollgate_compat_audio::speech::{
//!     default_alias, validate, AudioFormat, SpeechRequest, SpeechStreamEvent, StreamFormat,
//! };
//!
//! let body = r#"{
//!     "model": "tts-1-hd",
//!     "input": "The quick brown fox jumped over the lazy dog.",
//!     "voice": "alloy",
//!     "response_format": "opus",
//!     "speed": 1.25,
//!     "stream_format": "sse"
//! }"#;
//! let request: SpeechRequest = serde_json::from_str(body)?;
//! validate(&request)?;
//! assert_eq!(default_alias(&request.model), Some("speech-2.8-hd"));
//! assert!(request.voice.is_stock());
//! assert_eq!(request.served_format(), AudioFormat::Mp3);
//! assert_eq!(request.served_format().content_type(), "audio/mpeg");
//! assert_eq!(request.stream_format_or_default(), StreamFormat::Sse);
//!
//! // A request that breaks a rule is refused with the field and the rule named.
//! let bad: SpeechRequest =
//!     serde_json::from_str(r#"{"model": "tts-1", "input": "Hi", "speed": 2.5, "voice": "ash"}"#)?;
//! let err = validate(&bad).unwrap_err();
//! assert_eq!((err.field.as_str(), err.rule.code()), ("speed", "out_of_range"));
//! assert_eq!(err.to_string(), "'speed' must be between 0.5 and 2.0");
//!
//! // A missing voice is a validation error that names it, not a decode error.
//! let no_voice: SpeechRequest = serde_json::from_str(r#"{"model": "tts-1", "input": "Hi"}"#)?;
//! assert_eq!(validate(&no_voice).unwrap_err().field, "voice");
//!
//! // Stream the audio as SSE events.
//! let event = SpeechStreamEvent::delta(&[0xff, 0xfb]);
//! assert_eq!(serde_json::to_string(&event)?, r#"{"type":"speech.audio.delta","audio":"//s="}"#);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod format;
mod model;
mod request;
mod rules;
mod stream;
mod voice;

pub use format::{AudioFormat, ResponseFormat, StreamFormat};
pub use model::{DEFAULT_ALIASES, default_alias};
pub use request::SpeechRequest;
pub use rules::{
    MAX_INPUT_CHARS, MAX_INPUT_CHARS_UNCOMPRESSED, MAX_INSTRUCTIONS_CHARS, SPEED_RANGE, validate,
};
pub use stream::{SpeechStreamEvent, SpeechUsage};
pub use voice::{STOCK_VOICES, Voice, is_stock_voice};
