//! The rules of a `t2a_v2` request and their checks.

use std::ops::RangeInclusive;

use serde_json::Value;

use super::request::{AudioSetting, BITRATES, SAMPLE_RATES, T2aFormat, T2aRequest, VoiceSetting};
use crate::error::{FieldError, Rule};

/// wire-formats §3.1: `text` under 10,000 characters; this service allows at most 10,000, the
/// limit of the compat format (docs/api.md §2.1).
pub const MAX_TEXT_CHARS: usize = 10_000;

/// docs/api.md §2.4 and §8: `text` at most 2,000 characters when the format is `wav`, `flac` or `pcm`.
pub const MAX_TEXT_CHARS_UNCOMPRESSED: usize = 2_000;

/// wire-formats §3.1: `voice_setting.speed` from 0.5 to 2, both included.
pub const SPEED_RANGE: RangeInclusive<f64> = 0.5..=2.0;

/// wire-formats §3.1: `voice_setting.vol` is greater than 0 and at most this.
pub const MAX_VOL: f64 = 10.0;

/// wire-formats §3.1: `voice_setting.pitch`, an integer from -12 to 12 semitones.
pub const PITCH_RANGE: RangeInclusive<i64> = -12..=12;

/// wire-formats §3.1: `audio_setting.channel`, 1 (mono) or 2 (stereo).
pub const CHANNELS: [u8; 2] = [1, 2];

/// docs/api.md §2.4: the only `output_format`; the audio is always hex in `data.audio`.
pub const OUTPUT_FORMAT_HEX: &str = "hex";

/// Checks the values of a `t2a_v2` request and returns the first broken rule, in field order.
///
/// Characters are Unicode scalar values (Rust `char`s).
///
/// | Field | Rule | [`Rule`] |
/// |---|---|---|
/// | `model` | must not be empty | [`Required`](Rule::Required) |
/// | `text` | must not be empty | [`Required`](Rule::Required) |
/// | `text` | at most [`MAX_TEXT_CHARS`] characters | [`TooLong`](Rule::TooLong) |
/// | `text` | docs/api.md §2.4/§8: at most [`MAX_TEXT_CHARS_UNCOMPRESSED`] characters for wav, flac, pcm | [`TooLongForFormat`](Rule::TooLongForFormat) |
/// | `voice_setting.voice_id` | wire-formats §3.1: required unless `timbre_weights` is given | [`Required`](Rule::Required) |
/// | `voice_setting.speed` | wire-formats §3.1: within [`SPEED_RANGE`] | [`OutOfRange`](Rule::OutOfRange) |
/// | `voice_setting.vol` | wire-formats §3.1: greater than 0, at most [`MAX_VOL`] | [`OutOfRange`](Rule::OutOfRange) |
/// | `voice_setting.pitch` | wire-formats §3.1: within [`PITCH_RANGE`] | [`OutOfRange`](Rule::OutOfRange) |
/// | `audio_setting.sample_rate` | wire-formats §3.1: one of [`SAMPLE_RATES`] | [`UnsupportedValue`](Rule::UnsupportedValue) |
/// | `audio_setting.bitrate` | wire-formats §3.1: one of [`BITRATES`] | [`UnsupportedValue`](Rule::UnsupportedValue) |
/// | `audio_setting.format` | wire-formats §3.1: `mp3`, `pcm`, `flac` or `wav` | [`UnsupportedValue`](Rule::UnsupportedValue) |
/// | `audio_setting.format` | wire-formats §3.1: `wav` only without `stream: true` | [`NotStreamable`](Rule::NotStreamable) |
/// | `audio_setting.channel` | wire-formats §3.1: one of [`CHANNELS`] | [`UnsupportedValue`](Rule::UnsupportedValue) |
/// | `output_format` | docs/api.md §2.4: `url` is not offered | [`Unavailable`](Rule::Unavailable) |
/// | `output_format` | docs/api.md §2.4: otherwise only `hex` | [`UnsupportedValue`](Rule::UnsupportedValue) |
/// | `subtitle_enable` | docs/api.md §2.4: subtitles are not available; only `false` | [`Unavailable`](Rule::Unavailable) |
///
/// `timbre_weights` counts as given when it is present and not an empty array or object. The
/// inner structure of `pronunciation_dict`, `timbre_weights`, `language_boost` and `voice_modify`
/// is not checked (docs/api.md §2.4: "not shown"); the upstream has the last word on them.
///
/// ```
/// use tollgate_vendor_audio::t2a::{validate, AudioSetting, T2aRequest, VoiceSetting};
/// use tollgate_vendor_audio::Rule;
///
/// let mut request = T2aRequest::new("speech-2.8-hd", "Hello");
/// request.voice_setting = Some(VoiceSetting::new("English_Graceful_Lady"));
/// assert_eq!(validate(&request), Ok(()));
///
/// request.output_format = Some("url".into());
/// let err = validate(&request).unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("output_format", Rule::Unavailable));
/// ```
pub fn validate(req: &T2aRequest) -> Result<(), FieldError> {
    if req.model.is_empty() {
        return Err(FieldError::new(
            "model",
            Rule::Required,
            "'model' is required and must not be empty",
        ));
    }
    validate_text(req)?;
    validate_voice_setting(req.voice_setting.as_ref(), req.timbre_weights.as_ref())?;
    if let Some(audio) = &req.audio_setting {
        validate_audio_setting(audio, req.is_stream())?;
    }
    validate_output_format(req.output_format.as_deref())?;
    if req.subtitle_enable == Some(true) {
        return Err(FieldError::new(
            "subtitle_enable",
            Rule::Unavailable,
            "'subtitle_enable' is not available: subtitles are not offered; leave it out or set \
             it to false",
        ));
    }
    Ok(())
}

fn validate_text(req: &T2aRequest) -> Result<(), FieldError> {
    if req.text.is_empty() {
        return Err(FieldError::new(
            "text",
            Rule::Required,
            "'text' is required and must not be empty",
        ));
    }
    let chars = req.text.chars().count();
    let format = req.format();
    if format.has_short_limit() {
        // The short limit is the tighter one, so it is the one to report.
        if chars > MAX_TEXT_CHARS_UNCOMPRESSED {
            return Err(FieldError::new(
                "text",
                Rule::TooLongForFormat,
                format!(
                    "'text' has {chars} characters; at most {MAX_TEXT_CHARS_UNCOMPRESSED} are \
                     allowed when audio_setting.format is {format}"
                ),
            ));
        }
    } else if chars > MAX_TEXT_CHARS {
        return Err(FieldError::new(
            "text",
            Rule::TooLong,
            format!("'text' has {chars} characters; at most {MAX_TEXT_CHARS} are allowed"),
        ));
    }
    Ok(())
}

fn validate_voice_setting(
    voice: Option<&VoiceSetting>,
    timbre_weights: Option<&Value>,
) -> Result<(), FieldError> {
    let has_voice_id = voice
        .and_then(|voice| voice.voice_id.as_deref())
        .is_some_and(|id| !id.is_empty());
    if !has_voice_id && !timbre_weights.is_some_and(is_given) {
        return Err(FieldError::new(
            "voice_setting.voice_id",
            Rule::Required,
            "'voice_setting.voice_id' is required unless 'timbre_weights' is given",
        ));
    }
    let Some(voice) = voice else {
        return Ok(());
    };
    if let Some(speed) = voice.speed {
        // `contains` is false for NaN, so a NaN speed is refused too.
        if !SPEED_RANGE.contains(&speed) {
            return Err(FieldError::new(
                "voice_setting.speed",
                Rule::OutOfRange,
                format!(
                    "'voice_setting.speed' must be between {:?} and {:?}",
                    SPEED_RANGE.start(),
                    SPEED_RANGE.end()
                ),
            ));
        }
    }
    if let Some(vol) = voice.vol {
        // Written so that NaN fails the check.
        if !(vol > 0.0 && vol <= MAX_VOL) {
            return Err(FieldError::new(
                "voice_setting.vol",
                Rule::OutOfRange,
                format!("'voice_setting.vol' must be greater than 0 and at most {MAX_VOL}"),
            ));
        }
    }
    if let Some(pitch) = voice.pitch
        && !PITCH_RANGE.contains(&pitch)
    {
        return Err(FieldError::new(
            "voice_setting.pitch",
            Rule::OutOfRange,
            format!(
                "'voice_setting.pitch' must be an integer between {} and {}",
                PITCH_RANGE.start(),
                PITCH_RANGE.end()
            ),
        ));
    }
    Ok(())
}

/// Whether an optional JSON value counts as given: not `null`, not an empty array or object.
fn is_given(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Array(items) => !items.is_empty(),
        Value::Object(fields) => !fields.is_empty(),
        _ => true,
    }
}

fn validate_audio_setting(audio: &AudioSetting, stream: bool) -> Result<(), FieldError> {
    if let Some(rate) = audio.sample_rate
        && !SAMPLE_RATES.contains(&rate)
    {
        return Err(FieldError::new(
            "audio_setting.sample_rate",
            Rule::UnsupportedValue,
            format!(
                "'audio_setting.sample_rate' is {rate}; it must be one of {}",
                join(&SAMPLE_RATES)
            ),
        ));
    }
    if let Some(bitrate) = audio.bitrate
        && !BITRATES.contains(&bitrate)
    {
        return Err(FieldError::new(
            "audio_setting.bitrate",
            Rule::UnsupportedValue,
            format!(
                "'audio_setting.bitrate' is {bitrate}; it must be one of {}",
                join(&BITRATES)
            ),
        ));
    }
    if let Some(value) = audio.format.as_deref() {
        match T2aFormat::parse(value) {
            None => {
                return Err(FieldError::new(
                    "audio_setting.format",
                    Rule::UnsupportedValue,
                    format!(
                        "'audio_setting.format' is {value:?}; it must be one of {}",
                        join(&T2aFormat::ALL)
                    ),
                ));
            }
            Some(format) if stream && !format.is_streamable() => {
                let streamable: Vec<T2aFormat> = T2aFormat::ALL
                    .into_iter()
                    .filter(|f| f.is_streamable())
                    .collect();
                return Err(FieldError::new(
                    "audio_setting.format",
                    Rule::NotStreamable,
                    format!(
                        "'audio_setting.format' {format} is only available without streaming; \
                         with stream=true use one of {}",
                        join(&streamable)
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(channel) = audio.channel
        && !CHANNELS.contains(&channel)
    {
        return Err(FieldError::new(
            "audio_setting.channel",
            Rule::UnsupportedValue,
            format!("'audio_setting.channel' is {channel}; it must be 1 or 2"),
        ));
    }
    Ok(())
}

fn validate_output_format(output_format: Option<&str>) -> Result<(), FieldError> {
    match output_format {
        None | Some(OUTPUT_FORMAT_HEX) => Ok(()),
        Some("url") => Err(FieldError::new(
            "output_format",
            Rule::Unavailable,
            "'output_format' url is not available: audio download URLs are not offered, and the \
             audio is always returned hex-encoded in data.audio; leave output_format out or set \
             it to hex",
        )),
        Some(other) => Err(FieldError::new(
            "output_format",
            Rule::UnsupportedValue,
            format!("'output_format' is {other:?}; it must be hex"),
        )),
    }
}

fn join<T: std::fmt::Display>(values: &[T]) -> String {
    values
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
