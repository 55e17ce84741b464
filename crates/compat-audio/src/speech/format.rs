//! The format fields of a speech request: `response_format`, `stream_format`, and the
//! [`AudioFormat`] actually produced.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The `response_format` field: the audio format the client asks for.
///
/// wire-formats §1.1: `mp3` (the default), `opus`, `aac`, `flac`, `wav`, `pcm`, written in lower
/// case; any other value is a decode error. docs/api.md §2.1/§7: `opus` and `aac` are not produced; they
/// are answered as `mp3` (see [`served`](Self::served)).
///
/// ```
/// use tollgate_compat_audio::speech::{AudioFormat, ResponseFormat};
///
/// let format: ResponseFormat = serde_json::from_str(r#""opus""#)?;
/// assert_eq!(format, ResponseFormat::Opus);
/// assert_eq!(format.served(), AudioFormat::Mp3);
/// assert_eq!(ResponseFormat::default(), ResponseFormat::Mp3);
/// assert!(serde_json::from_str::<ResponseFormat>(r#""ogg""#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum ResponseFormat {
    /// MP3 (`"mp3"`), the default.
    #[default]
    Mp3,
    /// Opus (`"opus"`), served as MP3.
    Opus,
    /// AAC (`"aac"`), served as MP3.
    Aac,
    /// FLAC (`"flac"`).
    Flac,
    /// WAV (`"wav"`).
    Wav,
    /// Raw PCM without a header (`"pcm"`).
    Pcm,
}

impl ResponseFormat {
    /// Every format, in the order of wire-formats §1.1.
    pub const ALL: [ResponseFormat; 6] = [
        ResponseFormat::Mp3,
        ResponseFormat::Opus,
        ResponseFormat::Aac,
        ResponseFormat::Flac,
        ResponseFormat::Wav,
        ResponseFormat::Pcm,
    ];

    /// The value as it appears on the wire, e.g. `"opus"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Mp3 => "mp3",
            Self::Opus => "opus",
            Self::Aac => "aac",
            Self::Flac => "flac",
            Self::Wav => "wav",
            Self::Pcm => "pcm",
        }
    }

    /// The format that is actually produced for this request.
    ///
    /// docs/api.md §2.1/§7: opus and aac are answered as mp3; every other format is served as asked.
    ///
    /// ```
    /// use tollgate_compat_audio::speech::{AudioFormat, ResponseFormat};
    ///
    /// assert_eq!(ResponseFormat::Aac.served(), AudioFormat::Mp3);
    /// assert_eq!(ResponseFormat::Wav.served(), AudioFormat::Wav);
    /// ```
    pub const fn served(self) -> AudioFormat {
        match self {
            Self::Mp3 | Self::Opus | Self::Aac => AudioFormat::Mp3,
            Self::Flac => AudioFormat::Flac,
            Self::Wav => AudioFormat::Wav,
            Self::Pcm => AudioFormat::Pcm,
        }
    }
}

impl fmt::Display for ResponseFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An audio format that is actually produced (docs/api.md §2.1: `mp3`, `wav`, `flac`, `pcm`).
///
/// On the wire (for clients that record it) it is written in lower case, like
/// [`ResponseFormat`].
///
/// ```
/// use tollgate_compat_audio::speech::AudioFormat;
///
/// assert_eq!(AudioFormat::Mp3.content_type(), "audio/mpeg");
/// assert_eq!(AudioFormat::Flac.as_str(), "flac");
/// assert!(AudioFormat::Pcm.has_short_limit());
/// assert!(!AudioFormat::Mp3.has_short_limit());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AudioFormat {
    /// MP3, `audio/mpeg`.
    #[default]
    Mp3,
    /// WAV, `audio/wav`.
    Wav,
    /// FLAC, `audio/flac`.
    Flac,
    /// Raw PCM without a header, `audio/pcm`.
    Pcm,
}

impl AudioFormat {
    /// Every produced format.
    pub const ALL: [AudioFormat; 4] = [
        AudioFormat::Mp3,
        AudioFormat::Wav,
        AudioFormat::Flac,
        AudioFormat::Pcm,
    ];

    /// The format's name in lower case, e.g. `"wav"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Mp3 => "mp3",
            Self::Wav => "wav",
            Self::Flac => "flac",
            Self::Pcm => "pcm",
        }
    }

    /// The `Content-Type` of a response body in this format.
    ///
    /// wire-formats §1.1: the spec says `application/octet-stream`, but in practice the type
    /// follows the format (`audio/mpeg` for mp3); this crate names the format.
    pub const fn content_type(self) -> &'static str {
        match self {
            Self::Mp3 => "audio/mpeg",
            Self::Wav => "audio/wav",
            Self::Flac => "audio/flac",
            Self::Pcm => "audio/pcm",
        }
    }

    /// Whether the shorter input limit applies: docs/api.md §2.1 and §8, at most
    /// [`MAX_INPUT_CHARS_UNCOMPRESSED`](super::MAX_INPUT_CHARS_UNCOMPRESSED) characters for
    /// `wav`, `flac` and `pcm`.
    pub const fn has_short_limit(self) -> bool {
        matches!(self, Self::Wav | Self::Flac | Self::Pcm)
    }
}

impl fmt::Display for AudioFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `stream_format` field: how the audio is delivered.
///
/// wire-formats §1.1: `audio` (the default) streams the raw audio bytes; `sse` sends
/// [`SpeechStreamEvent`](super::SpeechStreamEvent)s as server-sent events. Any other value is a
/// decode error.
///
/// ```
/// use tollgate_compat_audio::speech::StreamFormat;
///
/// assert_eq!(serde_json::from_str::<StreamFormat>(r#""sse""#)?, StreamFormat::Sse);
/// assert_eq!(StreamFormat::default(), StreamFormat::Audio);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum StreamFormat {
    /// Raw audio bytes (`"audio"`), the default.
    #[default]
    Audio,
    /// Server-sent events carrying base64 audio (`"sse"`).
    Sse,
}

impl StreamFormat {
    /// The value as it appears on the wire: `"audio"` or `"sse"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Audio => "audio",
            Self::Sse => "sse",
        }
    }
}

impl fmt::Display for StreamFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
