//! The server-sent events of `stream_format: "sse"`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

/// One event of a `stream_format: "sse"` response, sent as the JSON of an SSE `data:` line
/// (wire-formats §1.1), tagged by its `type`.
///
/// | `type` | Fields |
/// |---|---|
/// | `speech.audio.delta` | `audio`: a chunk of audio in the served format, base64 (standard alphabet, padded) |
/// | `speech.audio.done` | `usage`: [`SpeechUsage`] |
///
/// A stream is any number of deltas followed by one done event. wire-formats §1.1 could not
/// confirm whether OpenAI adds `event:` lines or a `data: [DONE]` sentinel, so clients should
/// parse by the `type` field and tolerate both.
///
/// ```
/// use tollgate_compat_audio::speech::{SpeechStreamEvent, SpeechUsage};
///
/// let delta = SpeechStreamEvent::delta(b"ID3");
/// assert_eq!(
///     serde_json::to_string(&delta)?,
///     r#"{"type":"speech.audio.delta","audio":"SUQz"}"#
/// );
///
/// let done = SpeechStreamEvent::done(SpeechUsage::new(12, 88));
/// assert_eq!(
///     serde_json::to_string(&done)?,
///     r#"{"type":"speech.audio.done","usage":{"input_tokens":12,"output_tokens":88,"total_tokens":100}}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum SpeechStreamEvent {
    /// A chunk of audio (`speech.audio.delta`).
    #[serde(rename = "speech.audio.delta")]
    Delta {
        /// The audio bytes, base64 with the standard alphabet and padding.
        audio: String,
    },
    /// The end of the stream (`speech.audio.done`), with the usage.
    #[serde(rename = "speech.audio.done")]
    Done {
        /// The tokens used.
        usage: SpeechUsage,
    },
}

impl SpeechStreamEvent {
    /// A delta event carrying `audio_bytes`, base64-encoded with the standard alphabet and padding.
    pub fn delta(audio_bytes: &[u8]) -> Self {
        Self::Delta {
            audio: STANDARD.encode(audio_bytes),
        }
    }

    /// How a delta event's JSON reads around its base64 audio: `head`, the audio, `tail` — for
    /// a writer that encodes the audio straight into the event it sends (docs/benchmarks.md,
    /// "Lean streams").
    ///
    /// ```
    /// use tollgate_compat_audio::SpeechStreamEvent;
    ///
    /// let (head, tail) = SpeechStreamEvent::DELTA_JSON;
    /// let event = serde_json::to_string(&SpeechStreamEvent::delta(&[0xff, 0xfb]))?;
    /// assert_eq!(event, format!("{head}//s={tail}"));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub const DELTA_JSON: (&'static str, &'static str) =
        (r#"{"type":"speech.audio.delta","audio":""#, r#""}"#);

    /// The done event with its usage.
    pub fn done(usage: SpeechUsage) -> Self {
        Self::Done { usage }
    }

    /// The SSE event type, e.g. `"speech.audio.delta"`.
    pub const fn event_type(&self) -> &'static str {
        match self {
            Self::Delta { .. } => "speech.audio.delta",
            Self::Done { .. } => "speech.audio.done",
        }
    }
}

/// The `usage` of a `speech.audio.done` event (wire-formats §1.1: all three fields required).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct SpeechUsage {
    /// Tokens of the input text.
    pub input_tokens: u64,
    /// Tokens of the produced audio.
    pub output_tokens: u64,
    /// The sum of both.
    pub total_tokens: u64,
}

impl SpeechUsage {
    /// A usage with `total_tokens` = `input_tokens` + `output_tokens` (saturating).
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            total_tokens: input_tokens.saturating_add(output_tokens),
        }
    }
}
