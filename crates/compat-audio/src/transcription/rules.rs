//! The rules of a transcription request, its model aliases, and its checks.

use std::ops::RangeInclusive;

use super::params::{TranscriptionFormat, TranscriptionParams, join, model_required};
use crate::error::{FieldError, Rule};

/// docs/api.md §2.2: the service's recognition model.
pub const MODEL: &str = "asr-1.0";

/// The default alias table (docs/api.md §2.2): OpenAI's transcription model names (wire-formats §1.2)
/// accepted for [`MODEL`].
///
/// | Alias | Model |
/// |---|---|
/// | `whisper-1` (named by docs/api.md §2.2) | `asr-1.0` |
/// | `gpt-4o-transcribe` | `asr-1.0` |
/// | `gpt-4o-mini-transcribe` | `asr-1.0` |
/// | `gpt-4o-mini-transcribe-2025-12-15` | `asr-1.0` |
/// | `gpt-4o-transcribe-diarize` | `asr-1.0` |
/// | `gpt-transcribe` | `asr-1.0` |
///
/// OpenAI restricts the gpt-4o models to fewer response formats (wire-formats §1.2); behind an
/// alias they are `asr-1.0` and take every format of docs/api.md §2.2. A deployment may configure more
/// aliases; this is the table that applies when it does not.
pub const DEFAULT_ALIASES: &[(&str, &str)] = &[
    ("whisper-1", MODEL),
    ("gpt-4o-transcribe", MODEL),
    ("gpt-4o-mini-transcribe", MODEL),
    ("gpt-4o-mini-transcribe-2025-12-15", MODEL),
    ("gpt-4o-transcribe-diarize", MODEL),
    ("gpt-transcribe", MODEL),
];

/// The model that `model` stands for in [`DEFAULT_ALIASES`], or `None` when it is no alias there.
///
/// Model ids are compared exactly, as OpenAI's clients send them.
///
/// ```
/// use tollgate_compat_audio::transcription::default_alias;
///
/// assert_eq!(default_alias("whisper-1"), Some("asr-1.0"));
/// assert_eq!(default_alias("asr-1.0"), None);
/// ```
pub fn default_alias(model: &str) -> Option<&'static str> {
    DEFAULT_ALIASES
        .iter()
        .find(|(alias, _)| *alias == model)
        .map(|&(_, target)| target)
}

/// wire-formats §1.2: `temperature` from 0 to 1, both included.
pub const TEMPERATURE_RANGE: RangeInclusive<f64> = 0.0..=1.0;

/// Checks the values of the parsed params and returns the first broken rule, in field order.
///
/// | Field | Rule | [`Rule`] |
/// |---|---|---|
/// | `model` | must not be empty | [`Required`](Rule::Required) |
/// | `temperature` | wire-formats §1.2: a finite number within [`TEMPERATURE_RANGE`] | [`OutOfRange`](Rule::OutOfRange) |
/// | `stream` | docs/api.md §2.2: `true` only with `response_format` `json` or `text` | [`NotStreamable`](Rule::NotStreamable) |
///
/// Whether `model` names a configured model is the gateway's catalog question (404), not a
/// rule of the format. `language` is a free hint (docs/api.md §2.2), not checked. `word` granularity
/// with `json` or `text` is accepted and has no effect (see
/// [`TranscriptionParams::wants_words`]); OpenAI's "requires `verbose_json`" is relaxed because
/// docs/api.md §2.2 also gives word timestamps in `srt` and `vtt`. The file is checked by
/// [`validate_file`](super::validate_file()) and [`validate_duration`](super::validate_duration()).
///
/// ```
/// use tollgate_compat_audio::transcription::{validate, TranscriptionFormat, TranscriptionParams};
/// use tollgate_compat_audio::Rule;
///
/// let mut params = TranscriptionParams::new("whisper-1");
/// params.stream = true;
/// assert_eq!(validate(&params), Ok(()));
///
/// params.response_format = TranscriptionFormat::Vtt;
/// let err = validate(&params).unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("stream", Rule::NotStreamable));
/// assert_eq!(
///     err.to_string(),
///     "'stream' is only available with response_format json or text, not vtt"
/// );
/// ```
pub fn validate(p: &TranscriptionParams) -> Result<(), FieldError> {
    if p.model.trim().is_empty() {
        return Err(model_required());
    }
    if let Some(temperature) = p.temperature {
        // `contains` is false for NaN, so a NaN temperature is refused too.
        if !TEMPERATURE_RANGE.contains(&temperature) {
            return Err(super::params::temperature_error());
        }
    }
    if p.stream && !p.response_format.is_streamable() {
        let streamable = TranscriptionFormat::ALL
            .into_iter()
            .filter(|f| f.is_streamable())
            .map(TranscriptionFormat::as_str)
            .collect::<Vec<_>>()
            .join(" or ");
        return Err(FieldError::new(
            "stream",
            Rule::NotStreamable,
            format!(
                "'stream' is only available with response_format {streamable}, not {}",
                p.response_format
            ),
        ));
    }
    Ok(())
}

/// Formats a list of displayable items as `a, b, c` (used in messages).
pub(crate) fn list<T: std::fmt::Display>(items: &[T]) -> String {
    join(items.iter())
}
