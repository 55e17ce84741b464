//! The JSON response bodies of `POST /v1/audio/transcriptions` (docs/api.md §2.3, wire-formats §1.2).

use serde::{Deserialize, Serialize};

use super::timing::Word;

/// The `type` of a usage billed by audio duration.
pub const USAGE_DURATION: &str = "duration";

fn duration_kind() -> String {
    USAGE_DURATION.to_owned()
}

/// The `usage` of a response billed by audio duration (wire-formats §1.2):
/// `{"type": "duration", "seconds": 9}`.
///
/// `seconds` is the billed quantity: the audio's duration rounded up to whole seconds (docs/api.md §8,
/// billing rule 2).
///
/// ```
/// use tollgate_compat_audio::transcription::DurationUsage;
///
/// assert_eq!(
///     serde_json::to_string(&DurationUsage::new(9))?,
///     r#"{"type":"duration","seconds":9}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "TranscriptionUsage")
)]
pub struct DurationUsage {
    /// Always `"duration"` ([`USAGE_DURATION`]).
    #[serde(rename = "type", default = "duration_kind")]
    pub kind: String,
    /// The billed seconds.
    pub seconds: u64,
}

impl DurationUsage {
    /// A duration usage of `seconds`.
    pub fn new(seconds: u64) -> Self {
        Self {
            kind: duration_kind(),
            seconds,
        }
    }
}

impl Default for DurationUsage {
    fn default() -> Self {
        Self::new(0)
    }
}

/// The body of `response_format: json` (docs/api.md §2.3: `text` and `duration`; wire-formats §1.2:
/// `usage`).
///
/// ```
/// use tollgate_compat_audio::transcription::{DurationUsage, JsonResponse};
///
/// let body = JsonResponse { text: "Hi all.".into(), duration: 1.1, usage: Some(DurationUsage::new(2)) };
/// assert_eq!(
///     serde_json::to_string(&body)?,
///     r#"{"text":"Hi all.","duration":1.1,"usage":{"type":"duration","seconds":2}}"#
/// );
/// // OpenAI's own body has no duration; it decodes as 0.
/// let openai: JsonResponse = serde_json::from_str(r#"{"text":"Hi"}"#)?;
/// assert_eq!((openai.duration, openai.usage), (0.0, None));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "TranscriptionJson")
)]
pub struct JsonResponse {
    /// The recognised text.
    pub text: String,
    /// The audio's duration in seconds.
    #[serde(default)]
    pub duration: f64,
    /// The billed usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<DurationUsage>,
}

/// The body of `response_format: verbose_json` (docs/api.md §2.3, wire-formats §1.2).
///
/// Every field the OpenAI SDK's `TranscriptionVerbose` requires is present (`task`, `language`,
/// `duration`, `text`, `segments`, `usage`), plus docs/api.md §2.3's `n_speakers`; `words` only when
/// word timestamps were asked for. Fields an OpenAI body lacks (`n_speakers`, a segment's
/// `speaker`) decode as their defaults, so this type also reads OpenAI's own answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "TranscriptionVerbose")
)]
pub struct VerboseJsonResponse {
    /// Always `"transcribe"`.
    pub task: String,
    /// The language's full English name in lower case (`"english"`, wire-formats §1.2), see
    /// [`language_name`](super::language_name()).
    pub language: String,
    /// The audio's duration in seconds.
    pub duration: f64,
    /// The recognised text.
    pub text: String,
    /// The segments with their times and speakers.
    #[serde(default)]
    pub segments: Vec<VerboseSegment>,
    /// The words with their times, when word granularity was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub words: Option<Vec<Word>>,
    /// docs/api.md §2.3: the number of distinct speakers.
    #[serde(default)]
    pub n_speakers: u32,
    /// The billed usage.
    #[serde(default)]
    pub usage: DurationUsage,
}

/// A segment of [`VerboseJsonResponse`].
///
/// The OpenAI SDK requires every one of Whisper's fields (wire-formats §1.2). The ones that
/// describe Whisper's decoding have no counterpart here and carry neutral values: `seek` 0,
/// `tokens` empty, `temperature`, `avg_logprob`, `compression_ratio` and `no_speech_prob` 0.0.
/// `speaker` (docs/api.md §2.3) is added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "TranscriptionSegment")
)]
pub struct VerboseSegment {
    /// The segment's number, from 0.
    pub id: u32,
    /// Whisper's seek offset; always 0.
    #[serde(default)]
    pub seek: u32,
    /// Start time in seconds.
    pub start: f64,
    /// End time in seconds.
    pub end: f64,
    /// The text. Like OpenAI's, it starts with a space unless it starts with a CJK character
    /// (see [`Transcript::to_verbose_json`](super::Transcript::to_verbose_json)).
    pub text: String,
    /// Whisper's token ids; always empty.
    #[serde(default)]
    pub tokens: Vec<u32>,
    /// Whisper's sampling temperature; always 0.0.
    #[serde(default)]
    pub temperature: f64,
    /// Whisper's average log probability; always 0.0.
    #[serde(default)]
    pub avg_logprob: f64,
    /// Whisper's compression ratio; always 0.0.
    #[serde(default)]
    pub compression_ratio: f64,
    /// Whisper's probability of silence; always 0.0.
    #[serde(default)]
    pub no_speech_prob: f64,
    /// docs/api.md §2.3: the speaker label, `S1`, `S2`, ...
    #[serde(default)]
    pub speaker: String,
}
