//! The audio formats a Realtime session speaks, and how long a number of bytes of each lasts.
//!
//! OpenAI's Realtime API carries raw audio, base64-encoded in JSON events, in one of three
//! formats: 16-bit little-endian PCM, mono, at 24 kHz (`audio/pcm`, the GA spelling; `pcm16`
//! before it), or G.711 μ-law or A-law at 8 kHz (`audio/pcmu`, `audio/pcma`; `g711_ulaw`,
//! `g711_alaw`). None of them has a header, so the duration of what was relayed is its byte
//! count over the format's byte rate — what the gateway measures itself, whatever a vendor
//! later claims (docs/decisions.md, "Live voice sessions").

use serde_json::Value;

/// One of the session's audio formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AudioFormat {
    /// 16-bit PCM, mono, 24 kHz: 48,000 bytes a second. The default both ways.
    #[default]
    Pcm16,
    /// G.711 μ-law, 8 kHz: 8,000 bytes a second.
    Pcmu,
    /// G.711 A-law, 8 kHz: 8,000 bytes a second.
    Pcma,
}

/// Why a format could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatProblem {
    /// Not a format the API knows (the name as given).
    Unknown(String),
    /// `audio/pcm` at a rate other than 24 kHz.
    Rate(u64),
    /// Neither a string nor an object with a string `type`.
    Shape,
}

impl AudioFormat {
    /// Bytes a second of audio take.
    pub const fn bytes_per_second(self) -> u64 {
        match self {
            AudioFormat::Pcm16 => 48_000,
            AudioFormat::Pcmu | AudioFormat::Pcma => 8_000,
        }
    }

    /// The GA name (`audio/pcm`, `audio/pcmu`, `audio/pcma`).
    pub const fn as_str(self) -> &'static str {
        match self {
            AudioFormat::Pcm16 => "audio/pcm",
            AudioFormat::Pcmu => "audio/pcmu",
            AudioFormat::Pcma => "audio/pcma",
        }
    }

    /// Milliseconds `bytes` of this format last, rounded up.
    ///
    /// ```
    /// use tollgate_realtime::audio::AudioFormat;
    ///
    /// assert_eq!(AudioFormat::Pcm16.millis(48_000), 1_000);
    /// assert_eq!(AudioFormat::Pcm16.millis(1), 1);
    /// assert_eq!(AudioFormat::Pcmu.millis(8_000 * 60), 60_000);
    /// ```
    pub const fn millis(self, bytes: u64) -> u64 {
        let per_second = self.bytes_per_second();
        // bytes × 1000 / rate, rounded up, without overflow for any u64 byte count.
        let whole = bytes / per_second;
        let rest = bytes % per_second;
        whole
            .saturating_mul(1_000)
            .saturating_add((rest * 1_000).div_ceil(per_second))
    }

    /// The format a session's JSON names: the GA object (`{"type": "audio/pcm", "rate":
    /// 24000}`) or the older string (`"pcm16"`, `"g711_ulaw"`, `"g711_alaw"`).
    pub fn from_json(value: &Value) -> Result<AudioFormat, FormatProblem> {
        let (name, rate) = match value {
            Value::String(name) => (name.as_str(), None),
            Value::Object(fields) => match fields.get("type") {
                Some(Value::String(name)) => (name.as_str(), fields.get("rate")),
                None => ("audio/pcm", fields.get("rate")),
                Some(_) => return Err(FormatProblem::Shape),
            },
            _ => return Err(FormatProblem::Shape),
        };
        let format = match name {
            "audio/pcm" | "pcm16" => AudioFormat::Pcm16,
            "audio/pcmu" | "g711_ulaw" => AudioFormat::Pcmu,
            "audio/pcma" | "g711_alaw" => AudioFormat::Pcma,
            other => return Err(FormatProblem::Unknown(other.to_owned())),
        };
        match rate {
            None | Some(Value::Null) => Ok(format),
            Some(rate) if format == AudioFormat::Pcm16 && rate.as_u64() == Some(24_000) => {
                Ok(format)
            }
            Some(rate) => Err(FormatProblem::Rate(rate.as_u64().unwrap_or(0))),
        }
    }

    /// Whether `audio` can be this format's: raw samples have no header, so a container's
    /// magic at the start (a WAV, MP3, Ogg, FLAC or MP4 file) is another format, and 16-bit PCM
    /// comes in whole samples. `Err` names what the bytes look like instead.
    ///
    /// ```
    /// use tollgate_realtime::audio::AudioFormat;
    ///
    /// assert!(AudioFormat::Pcm16.admits(&[0, 0, 1, 0]).is_ok());
    /// assert_eq!(AudioFormat::Pcm16.admits(b"RIFF\x24\0\0\0WAVEfmt "), Err("a WAV file"));
    /// assert_eq!(AudioFormat::Pcm16.admits(&[0, 0, 1]), Err("a part of a 16-bit sample"));
    /// assert!(AudioFormat::Pcmu.admits(&[0x7f, 0x7f, 0x7f]).is_ok());
    /// ```
    pub fn admits(self, audio: &[u8]) -> Result<(), &'static str> {
        if let Some(container) = container(audio) {
            return Err(container);
        }
        if self == AudioFormat::Pcm16 && !audio.len().is_multiple_of(2) {
            return Err("a part of a 16-bit sample");
        }
        Ok(())
    }
}

/// The container `bytes` begin like, if any.
fn container(bytes: &[u8]) -> Option<&'static str> {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    if starts(b"RIFF") && bytes.get(8..12) == Some(b"WAVE") {
        Some("a WAV file")
    } else if starts(b"ID3") {
        Some("an MP3 file")
    } else if starts(b"OggS") {
        Some("an Ogg file")
    } else if starts(b"fLaC") {
        Some("a FLAC file")
    } else if bytes.get(4..8) == Some(b"ftyp") {
        Some("an MP4 file")
    } else {
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_spellings_are_read_and_other_rates_refused() {
        for (value, format) in [
            (
                json!({"type": "audio/pcm", "rate": 24000}),
                AudioFormat::Pcm16,
            ),
            (json!({"type": "audio/pcmu"}), AudioFormat::Pcmu),
            (json!("g711_alaw"), AudioFormat::Pcma),
            (json!("pcm16"), AudioFormat::Pcm16),
        ] {
            assert_eq!(AudioFormat::from_json(&value), Ok(format), "{value}");
        }
        assert_eq!(
            AudioFormat::from_json(&json!({"type": "audio/pcm", "rate": 16000})),
            Err(FormatProblem::Rate(16_000))
        );
        assert_eq!(
            AudioFormat::from_json(&json!("mp3")),
            Err(FormatProblem::Unknown("mp3".into()))
        );
        assert_eq!(AudioFormat::from_json(&json!(3)), Err(FormatProblem::Shape));
    }

    #[test]
    fn durations_round_up_and_never_overflow() {
        assert_eq!(AudioFormat::Pcm16.millis(0), 0);
        assert_eq!(AudioFormat::Pcm16.millis(47), 1);
        assert_eq!(AudioFormat::Pcm16.millis(48), 1);
        assert_eq!(AudioFormat::Pcm16.millis(49), 2);
        assert_eq!(
            AudioFormat::Pcma.millis(u64::MAX),
            2_305_843_009_213_693_952
        );
    }
}
