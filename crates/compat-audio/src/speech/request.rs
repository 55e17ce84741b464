//! The request body of `POST /v1/audio/speech`.

use serde::{Deserialize, Deserializer, Serialize};

use super::format::{AudioFormat, ResponseFormat, StreamFormat};
use super::voice::Voice;

/// The body of `POST /v1/audio/speech` (docs/api.md §2.1, wire-formats §1.1).
///
/// Decoding checks types only; the value rules are checked by [`validate`](super::validate()),
/// which names the field and the rule. So that a missing required value is reported the same way
/// as an empty one, an absent or `null` `model`, `input` or `voice` decodes as an empty value and
/// is then refused by validation (`'voice' is required`), not by the decoder. Unknown fields are
/// ignored.
///
/// ```
/// use tollgate_compat_audio::speech::{AudioFormat, ResponseFormat, SpeechRequest, Voice};
///
/// let request: SpeechRequest = serde_json::from_str(
///     r#"{"model":"tts-1","input":"Hello!","voice":"alloy","response_format":"aac","x":1}"#,
/// )?;
/// assert_eq!(request.voice, Voice::Name("alloy".into()));
/// assert_eq!(request.response_format, Some(ResponseFormat::Aac));
/// assert_eq!(request.served_format(), AudioFormat::Mp3);
///
/// // Absent optional fields stay absent when the request is sent on.
/// let outgoing = SpeechRequest::new("speech-2.8-hd", "Hi", "alloy");
/// assert_eq!(
///     serde_json::to_string(&outgoing)?,
///     r#"{"model":"speech-2.8-hd","input":"Hi","voice":"alloy"}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    // Decoded when missing, refused by validation naming it: required all the same.
    schemars(extend("required" = ["model", "input", "voice"]))
)]
pub struct SpeechRequest {
    /// The model id or an alias (docs/api.md §2.1), e.g. `speech-2.8-hd` or `tts-1`.
    #[serde(default, deserialize_with = "null_as_empty")]
    #[cfg_attr(
        feature = "schema",
        schemars(transform = without_default, extend("examples" = ["tts-1", "speech-2.8-hd"]))
    )]
    pub model: String,
    /// The text to read aloud: at most 10,000 characters (2,000 for wav, flac and pcm; the
    /// rules' `MAX_INPUT_CHARS` and `MAX_INPUT_CHARS_UNCOMPRESSED`), billed per character, a CJK
    /// character counting 2.
    #[serde(default, deserialize_with = "null_as_empty")]
    #[cfg_attr(
        feature = "schema",
        schemars(transform = without_default, length(max = crate::speech::MAX_INPUT_CHARS))
    )]
    pub input: String,
    /// The voice; required.
    #[serde(default = "missing_voice", deserialize_with = "voice_or_missing")]
    #[cfg_attr(feature = "schema", schemars(transform = without_default))]
    pub voice: Voice,
    /// Instructions on how to speak (tone, pace, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The requested audio format; absent means [`ResponseFormat::Mp3`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// The speaking speed; absent means 1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(range(
            min = *crate::speech::SPEED_RANGE.start(),
            max = *crate::speech::SPEED_RANGE.end()
        ))
    )]
    pub speed: Option<f64>,
    /// How the audio is delivered; absent means [`StreamFormat::Audio`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_format: Option<StreamFormat>,
}

/// The decoder's fallback for a missing field, which the rules refuse: not a value to document.
#[cfg(feature = "schema")]
fn without_default(schema: &mut schemars::Schema) {
    schema.remove("default");
}

impl SpeechRequest {
    /// A request with only the required fields set.
    pub fn new(
        model: impl Into<String>,
        input: impl Into<String>,
        voice: impl Into<Voice>,
    ) -> Self {
        Self {
            model: model.into(),
            input: input.into(),
            voice: voice.into(),
            instructions: None,
            response_format: None,
            speed: None,
            stream_format: None,
        }
    }

    /// The requested format: `response_format`, or `mp3` when it is absent (wire-formats §1.1).
    pub fn response_format_or_default(&self) -> ResponseFormat {
        self.response_format.unwrap_or_default()
    }

    /// The format that is actually produced (docs/api.md §2.1/§7: opus and aac are answered as mp3).
    pub fn served_format(&self) -> AudioFormat {
        self.response_format_or_default().served()
    }

    /// The delivery: `stream_format`, or `audio` when it is absent (wire-formats §1.1).
    pub fn stream_format_or_default(&self) -> StreamFormat {
        self.stream_format.unwrap_or_default()
    }

    /// The speaking speed: `speed`, or 1.0 when it is absent (wire-formats §1.1).
    pub fn speed_or_default(&self) -> f64 {
        self.speed.unwrap_or(1.0)
    }
}

/// The value of an absent `voice`: an empty name, which validation refuses as missing.
fn missing_voice() -> Voice {
    Voice::Name(String::new())
}

fn voice_or_missing<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Voice, D::Error> {
    Ok(Option::<Voice>::deserialize(deserializer)?.unwrap_or_else(missing_voice))
}

fn null_as_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
}
