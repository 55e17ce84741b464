//! The request body of `POST /v1/t2a_v2`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// wire-formats §3.1: `audio_setting.sample_rate` defaults to 32000 Hz.
pub const DEFAULT_SAMPLE_RATE: u32 = 32_000;

/// wire-formats §3.1: the accepted `audio_setting.sample_rate` values, in Hz.
pub const SAMPLE_RATES: [u32; 6] = [8000, 16000, 22050, 24000, 32000, 44100];

/// wire-formats §3.1: the accepted `audio_setting.bitrate` values, in bit/s (mp3 only; the
/// default is 128000).
pub const BITRATES: [u32; 4] = [32000, 64000, 128000, 256000];

/// The body of `POST /v1/t2a_v2` (docs/api.md §2.4, wire-formats §3.1).
///
/// Decoding checks types only; the value rules are checked by [`validate`](super::validate()),
/// which names the field and the rule. An absent or `null` `model` or `text` decodes as an empty
/// string and is then refused by validation. Fields this crate does not model (for example
/// `subtitle_type`) are kept in [`extra`](Self::extra) and pass through unchanged, and so are the
/// objects whose inner structure is not stated (`pronunciation_dict`, `timbre_weights`,
/// `language_boost`, `voice_modify`), which are kept as raw JSON.
///
/// ```
/// use tollgate_vendor_audio::t2a::{T2aFormat, T2aRequest};
///
/// let request: T2aRequest = serde_json::from_str(r#"{
///     "model": "speech-2.8-hd",
///     "text": "Welcome back.",
///     "voice_setting": {"voice_id": "English_Graceful_Lady", "speed": 1.0},
///     "audio_setting": {"format": "flac", "sample_rate": 44100},
///     "subtitle_type": "word"
/// }"#)?;
/// assert_eq!(request.format(), T2aFormat::Flac);
/// assert_eq!(request.sample_rate(), 44100);
/// assert!(!request.is_stream());
/// assert_eq!(request.extra["subtitle_type"], "word");
///
/// // Absent optional fields stay absent when the request is sent on.
/// let outgoing = T2aRequest::new("speech-2.8-turbo", "Hi");
/// assert_eq!(serde_json::to_string(&outgoing)?, r#"{"model":"speech-2.8-turbo","text":"Hi"}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    // Decoded when missing, refused by validation naming it: required all the same.
    schemars(extend("required" = ["model", "text"]))
)]
pub struct T2aRequest {
    /// The model id, e.g. `speech-2.8-hd`.
    #[serde(default, deserialize_with = "null_as_empty")]
    #[cfg_attr(
        feature = "schema",
        schemars(transform = without_default, extend("examples" = ["speech-2.8-hd"]))
    )]
    pub model: String,
    /// The text to synthesize: at most 10,000 characters (2,000 for wav, flac and pcm).
    #[serde(default, deserialize_with = "null_as_empty")]
    #[cfg_attr(
        feature = "schema",
        schemars(transform = without_default, length(max = super::MAX_TEXT_CHARS))
    )]
    pub text: String,
    /// `true` for SSE chunks, `false` (the default) for one JSON response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Options of a streaming response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// The voice: id, speed, volume, pitch, emotion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice_setting: Option<VoiceSetting>,
    /// The audio: format, sample rate, bitrate, channels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_setting: Option<AudioSetting>,
    /// Pronunciation overrides, e.g. `{"tone": ["omg/oh my god"]}`; passed through as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pronunciation_dict: Option<Value>,
    /// A mix of up to four voices, `[{"voice_id", "weight"}]`; replaces
    /// `voice_setting.voice_id`. Passed through as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timbre_weights: Option<Value>,
    /// A language hint such as `"English"` or `"auto"`; passed through as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language_boost: Option<Value>,
    /// Voice effects (`pitch`, `intensity`, `timbre`, `sound_effects`); passed through as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice_modify: Option<Value>,
    /// Subtitles; docs/api.md §2.4: not available, only `false` is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtitle_enable: Option<bool>,
    /// `hex` (the default); docs/api.md §2.4: the output is always hex, `url` is not offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_format: Option<String>,
    /// Whether to add an AIGC watermark (non-stream only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aigc_watermark: Option<bool>,
    /// Fields this crate does not model, kept so they pass through unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The decoder's fallback for a missing field, which the rules refuse: not a value to document.
#[cfg(feature = "schema")]
fn without_default(schema: &mut schemars::Schema) {
    schema.remove("default");
}

impl T2aRequest {
    /// A request with only `model` and `text` set.
    pub fn new(model: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            text: text.into(),
            ..Self::default()
        }
    }

    /// The audio format: `audio_setting.format`, or `mp3` when it is absent (wire-formats §3.1).
    ///
    /// A value that is not one of the four formats also counts as `mp3` here;
    /// [`validate`](super::validate()) refuses it.
    pub fn format(&self) -> T2aFormat {
        self.audio_setting
            .as_ref()
            .and_then(|audio| audio.format.as_deref())
            .and_then(T2aFormat::parse)
            .unwrap_or_default()
    }

    /// The sample rate in Hz: `audio_setting.sample_rate`, or [`DEFAULT_SAMPLE_RATE`].
    pub fn sample_rate(&self) -> u32 {
        self.audio_setting
            .as_ref()
            .and_then(|audio| audio.sample_rate)
            .unwrap_or(DEFAULT_SAMPLE_RATE)
    }

    /// Whether the response is streamed (`stream: true`).
    pub fn is_stream(&self) -> bool {
        self.stream == Some(true)
    }

    /// Whether the final frame of a stream leaves out the aggregated audio
    /// (`stream_options.exclude_aggregated_audio`, default `false`).
    ///
    /// wire-formats §3.3: when this is `false`, the final frame repeats the whole audio; a relay
    /// that forwards every chunk to a player plays it twice.
    pub fn excludes_aggregated_audio(&self) -> bool {
        self.stream_options
            .as_ref()
            .and_then(|options| options.exclude_aggregated_audio)
            .unwrap_or(false)
    }

    /// The voice id (`voice_setting.voice_id`), if given.
    pub fn voice_id(&self) -> Option<&str> {
        self.voice_setting
            .as_ref()
            .and_then(|voice| voice.voice_id.as_deref())
    }
}

/// The `stream_options` object (wire-formats §3.1).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "T2aStreamOptions"))]
pub struct StreamOptions {
    /// When `true`, the final frame does not repeat the whole audio (default `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_aggregated_audio: Option<bool>,
}

/// The `voice_setting` object (wire-formats §3.1).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct VoiceSetting {
    /// The voice id, case-sensitive; required unless `timbre_weights` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice_id: Option<String>,
    /// Speaking speed, 0.5 to 2 (default 1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// Volume, greater than 0 and at most 10 (default 1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vol: Option<f64>,
    /// Pitch in semitones, an integer from -12 to 12 (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pitch: Option<i64>,
    /// `happy`, `sad`, `angry`, `fearful`, `disgusted`, `surprised`, `calm`, `fluent`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emotion: Option<String>,
    /// Text normalization (numbers, dates, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_normalization: Option<bool>,
    /// Read LaTeX formulas aloud.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latex_read: Option<bool>,
    /// Fields this crate does not model, kept so they pass through unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl VoiceSetting {
    /// A voice setting with only `voice_id` set.
    pub fn new(voice_id: impl Into<String>) -> Self {
        Self {
            voice_id: Some(voice_id.into()),
            ..Self::default()
        }
    }
}

/// The `audio_setting` object (wire-formats §3.1).
///
/// `format` is kept as a string so that an unknown format reaches validation, which refuses it
/// naming the accepted ones; [`T2aRequest::format`] reads it as a [`T2aFormat`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AudioSetting {
    /// Sample rate in Hz, one of [`SAMPLE_RATES`] (default [`DEFAULT_SAMPLE_RATE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_rate: Option<u32>,
    /// Bitrate in bit/s, one of [`BITRATES`] (mp3 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bitrate: Option<u32>,
    /// `mp3` (default), `pcm`, `flac` or `wav`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// 1 (mono, the default) or 2 (stereo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<u8>,
    /// Constant bitrate (streaming mp3 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_cbr: Option<bool>,
    /// Fields this crate does not model, kept so they pass through unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An audio format of `audio_setting.format` (wire-formats §3.1): `mp3` (the default), `pcm`,
/// `flac`, `wav`.
///
/// ```
/// use tollgate_vendor_audio::t2a::T2aFormat;
///
/// assert_eq!(T2aFormat::parse("wav"), Some(T2aFormat::Wav));
/// assert_eq!(T2aFormat::parse("opus"), None);
/// assert!(T2aFormat::Wav.has_short_limit());
/// assert!(!T2aFormat::Wav.is_streamable());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum T2aFormat {
    /// MP3 (`"mp3"`), the default.
    #[default]
    Mp3,
    /// Raw PCM (`"pcm"`).
    Pcm,
    /// FLAC (`"flac"`).
    Flac,
    /// WAV (`"wav"`), non-stream only.
    Wav,
}

impl T2aFormat {
    /// Every format, in the order of wire-formats §3.1.
    pub const ALL: [T2aFormat; 4] = [
        T2aFormat::Mp3,
        T2aFormat::Pcm,
        T2aFormat::Flac,
        T2aFormat::Wav,
    ];

    /// The format named `value` exactly as on the wire (lower case), or `None`.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|format| format.as_str() == value)
    }

    /// The value as it appears on the wire, e.g. `"flac"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Mp3 => "mp3",
            Self::Pcm => "pcm",
            Self::Flac => "flac",
            Self::Wav => "wav",
        }
    }

    /// Whether the shorter text limit applies: docs/api.md §2.4 and §8, at most
    /// [`MAX_TEXT_CHARS_UNCOMPRESSED`](super::MAX_TEXT_CHARS_UNCOMPRESSED) characters for `wav`,
    /// `flac` and `pcm`.
    pub const fn has_short_limit(self) -> bool {
        matches!(self, Self::Pcm | Self::Flac | Self::Wav)
    }

    /// Whether the format can be streamed (wire-formats §3.1: `wav` is non-stream only).
    pub const fn is_streamable(self) -> bool {
        !matches!(self, Self::Wav)
    }
}

impl fmt::Display for T2aFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn null_as_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
}
