//! The limits of a speech request and their checks.

use std::ops::RangeInclusive;

use super::request::SpeechRequest;
use super::voice::Voice;
use crate::error::{FieldError, Rule};

/// docs/api.md §2.1 and §8: `input` at most 10,000 characters.
///
/// This replaces OpenAI's own limit of 4096 (wire-formats §1.1); the specification wins.
pub const MAX_INPUT_CHARS: usize = 10_000;

/// docs/api.md §2.1 and §8: `input` at most 2,000 characters when the served format is `wav`, `flac` or
/// `pcm` (see [`AudioFormat::has_short_limit`](super::AudioFormat::has_short_limit)).
pub const MAX_INPUT_CHARS_UNCOMPRESSED: usize = 2_000;

/// docs/api.md §2.1 and §8: `speed` from 0.5 to 2.0, both included.
///
/// This narrows OpenAI's own range of 0.25 to 4.0 (wire-formats §1.1); the specification wins.
pub const SPEED_RANGE: RangeInclusive<f64> = 0.5..=2.0;

/// wire-formats §1.1: `instructions` at most 4096 characters.
pub const MAX_INSTRUCTIONS_CHARS: usize = 4_096;

/// Checks the values of a speech request and returns the first broken rule, in field order.
///
/// Characters are Unicode scalar values (Rust `char`s), so `"naïve"` has 5 and an emoji has 1.
///
/// | Field | Rule | [`Rule`] |
/// |---|---|---|
/// | `model` | must not be empty | [`Required`](Rule::Required) |
/// | `input` | must not be empty | [`Required`](Rule::Required) |
/// | `input` | docs/api.md §2.1: at most [`MAX_INPUT_CHARS`] characters | [`TooLong`](Rule::TooLong) |
/// | `input` | docs/api.md §2.1: at most [`MAX_INPUT_CHARS_UNCOMPRESSED`] characters when the *served* format is wav, flac or pcm (opus and aac are served as mp3 and keep the long limit) | [`TooLongForFormat`](Rule::TooLongForFormat) |
/// | `voice` | docs/api.md §2.1: required, a non-empty name | [`Required`](Rule::Required) |
/// | `voice.id` | a custom voice needs a non-empty `id` | [`Required`](Rule::Required) |
/// | `instructions` | wire-formats §1.1: at most [`MAX_INSTRUCTIONS_CHARS`] characters | [`TooLong`](Rule::TooLong) |
/// | `speed` | docs/api.md §2.1: a finite number within [`SPEED_RANGE`] | [`OutOfRange`](Rule::OutOfRange) |
///
/// `response_format` and `stream_format` are checked when the request is decoded (an unknown
/// value is a decode error).
///
/// ```
/// use tollgate_compat_audio::speech::{validate, ResponseFormat, SpeechRequest};
/// use tollgate_compat_audio::Rule;
///
/// let mut request = SpeechRequest::new("tts-1", "x".repeat(2_001), "alloy");
/// assert_eq!(validate(&request), Ok(()));
///
/// request.response_format = Some(ResponseFormat::Wav);
/// let err = validate(&request).unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("input", Rule::TooLongForFormat));
/// assert_eq!(
///     err.to_string(),
///     "'input' has 2001 characters; at most 2000 are allowed when response_format is wav"
/// );
/// ```
pub fn validate(req: &SpeechRequest) -> Result<(), FieldError> {
    if req.model.is_empty() {
        return Err(FieldError::new(
            "model",
            Rule::Required,
            "'model' is required and must not be empty",
        ));
    }
    validate_input(req)?;
    validate_voice(&req.voice)?;
    if let Some(instructions) = &req.instructions {
        let chars = instructions.chars().count();
        if chars > MAX_INSTRUCTIONS_CHARS {
            return Err(FieldError::new(
                "instructions",
                Rule::TooLong,
                format!(
                    "'instructions' has {chars} characters; at most {MAX_INSTRUCTIONS_CHARS} are \
                     allowed"
                ),
            ));
        }
    }
    if let Some(speed) = req.speed {
        // `contains` is false for NaN, so a NaN speed is refused too.
        if !SPEED_RANGE.contains(&speed) {
            return Err(FieldError::new(
                "speed",
                Rule::OutOfRange,
                format!(
                    "'speed' must be between {:?} and {:?}",
                    SPEED_RANGE.start(),
                    SPEED_RANGE.end()
                ),
            ));
        }
    }
    Ok(())
}

fn validate_input(req: &SpeechRequest) -> Result<(), FieldError> {
    if req.input.is_empty() {
        return Err(FieldError::new(
            "input",
            Rule::Required,
            "'input' is required and must not be empty",
        ));
    }
    let chars = req.input.chars().count();
    let served = req.served_format();
    if served.has_short_limit() {
        // The short limit is the tighter one, so it is the one to report.
        if chars > MAX_INPUT_CHARS_UNCOMPRESSED {
            return Err(FieldError::new(
                "input",
                Rule::TooLongForFormat,
                format!(
                    "'input' has {chars} characters; at most {MAX_INPUT_CHARS_UNCOMPRESSED} are \
                     allowed when response_format is {served}"
                ),
            ));
        }
    } else if chars > MAX_INPUT_CHARS {
        return Err(FieldError::new(
            "input",
            Rule::TooLong,
            format!("'input' has {chars} characters; at most {MAX_INPUT_CHARS} are allowed"),
        ));
    }
    Ok(())
}

fn validate_voice(voice: &Voice) -> Result<(), FieldError> {
    match voice {
        Voice::Name(name) if name.is_empty() => Err(FieldError::new(
            "voice",
            Rule::Required,
            "'voice' is required",
        )),
        Voice::Custom { id } if id.is_empty() => Err(FieldError::new(
            "voice.id",
            Rule::Required,
            "'voice.id' must not be empty",
        )),
        _ => Ok(()),
    }
}
