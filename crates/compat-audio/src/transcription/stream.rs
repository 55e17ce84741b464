//! The server-sent events of `stream: true`.

use serde::{Deserialize, Serialize};

use super::response::USAGE_DURATION;

/// One event of a transcription stream, sent as the JSON of an SSE `data:` line (docs/api.md §6,
/// wire-formats §1.2), tagged by its `type`.
///
/// | `type` | Fields |
/// |---|---|
/// | `transcript.text.delta` | `delta`: the next piece of text |
/// | `transcript.text.done` | `text`: the whole text; `usage`: [`StreamUsage`] |
///
/// A stream is any number of deltas followed by one done event; `response_format` `json` and
/// `text` stream alike. Like OpenAI's example (wire-formats §1.2), there are no `event:` lines
/// and no `data: [DONE]` sentinel.
///
/// docs/api.md §6 gives the done event's usage as `{type: "duration", seconds, input_tokens}`, which
/// differs from OpenAI's token usage (wire-formats §1.2); the specification wins. OpenAI's
/// optional fields (`logprobs`, `segment_id`, `languages`) are not sent and are ignored when
/// decoding.
///
/// ```
/// use tollgate_compat_audio::transcription::{StreamUsage, TranscriptionStreamEvent};
///
/// let delta = TranscriptionStreamEvent::delta("Hello");
/// assert_eq!(
///     serde_json::to_string(&delta)?,
///     r#"{"type":"transcript.text.delta","delta":"Hello"}"#
/// );
/// let done = TranscriptionStreamEvent::done("Hello world.", StreamUsage::new(4, 4));
/// assert_eq!(
///     serde_json::to_string(&done)?,
///     r#"{"type":"transcript.text.done","text":"Hello world.","usage":{"type":"duration","seconds":4,"input_tokens":4}}"#
/// );
/// assert_eq!(done.event_type(), "transcript.text.done");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum TranscriptionStreamEvent {
    /// The next piece of text (`transcript.text.delta`).
    #[serde(rename = "transcript.text.delta")]
    Delta {
        /// The text, to be appended to the previous deltas.
        delta: String,
    },
    /// The end of the stream (`transcript.text.done`), with the whole text and the usage.
    #[serde(rename = "transcript.text.done")]
    Done {
        /// The whole text.
        text: String,
        /// The billed usage.
        usage: StreamUsage,
    },
}

impl TranscriptionStreamEvent {
    /// A delta event.
    pub fn delta(delta: impl Into<String>) -> Self {
        Self::Delta {
            delta: delta.into(),
        }
    }

    /// The done event.
    pub fn done(text: impl Into<String>, usage: StreamUsage) -> Self {
        Self::Done {
            text: text.into(),
            usage,
        }
    }

    /// The SSE event type, e.g. `"transcript.text.delta"`.
    pub const fn event_type(&self) -> &'static str {
        match self {
            Self::Delta { .. } => "transcript.text.delta",
            Self::Done { .. } => "transcript.text.done",
        }
    }
}

fn duration_kind() -> String {
    USAGE_DURATION.to_owned()
}

/// The `usage` of a `transcript.text.done` event (docs/api.md §6): `type` `"duration"`, `seconds`
/// (integer) and `input_tokens` (integer).
///
/// `seconds` is the billed quantity (docs/api.md §8, billing rule 2: the duration rounded up). What
/// `input_tokens` counts is not stated; the gateway decides.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StreamUsage {
    /// Always `"duration"`.
    #[serde(rename = "type", default = "duration_kind")]
    pub kind: String,
    /// The billed seconds.
    pub seconds: u64,
    /// The input tokens.
    #[serde(default)]
    pub input_tokens: u64,
}

impl StreamUsage {
    /// A duration usage of `seconds` with `input_tokens`.
    pub fn new(seconds: u64, input_tokens: u64) -> Self {
        Self {
            kind: duration_kind(),
            seconds,
            input_tokens,
        }
    }
}
