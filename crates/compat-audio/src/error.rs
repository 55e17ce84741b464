//! Field-level errors, shared by the resources of this crate.
//!
//! A request that breaks a rule is refused with a [`FieldError`]: the JSON path or form field of
//! the offending value (`input`, `voice`, `voice.id`, `speed`, `file`, `stream`, ...), the [`Rule`]
//! it broke, and a sentence for
//! the API user that names both. The parts map directly onto an OpenAI error body
//! (wire-formats §1.3): HTTP 400, `type` = `invalid_request_error`, `param` =
//! [`FieldError::field`], `code` = [`Rule::code`], `message` = [`FieldError::message`].
//!
//! | [`Rule`] | Code | Broken when |
//! |---|---|---|
//! | [`Required`](Rule::Required) | `required` | a required value is missing or empty |
//! | [`TooLong`](Rule::TooLong) | `too_long` | a text has more characters than its limit |
//! | [`TooLongForFormat`](Rule::TooLongForFormat) | `too_long_for_format` | a text is within the general limit but over the limit of the requested audio format |
//! | [`OutOfRange`](Rule::OutOfRange) | `out_of_range` | a number lies outside its range (or is not a finite number) |
//! | [`UnsupportedValue`](Rule::UnsupportedValue) | `unsupported_value` | a value is not one of the accepted values (a form field's `response_format`, `stream`, a granularity, a file's format) |
//! | [`NotStreamable`](Rule::NotStreamable) | `not_streamable` | `stream` is asked for with a value that cannot be streamed |
//! | [`TooLarge`](Rule::TooLarge) | `too_large` | an uploaded file has more bytes than allowed |
//! | [`AudioTooLong`](Rule::AudioTooLong) | `audio_too_long` | uploaded audio lasts longer than allowed |

use std::fmt;

/// A rule of the format, with a stable snake_case code (see [`Rule::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A required value is missing or empty (`"model": ""`, no `voice`).
    Required,
    /// A text has more characters than allowed (docs/api.md §2.1: `input` at most 10,000 characters).
    TooLong,
    /// A text has more characters than allowed for the requested audio format (docs/api.md §2.1: at most
    /// 2,000 characters for `wav`, `flac` and `pcm`).
    TooLongForFormat,
    /// A number is outside its range, or not a finite number (docs/api.md §2.1: `speed` 0.5 to 2.0;
    /// wire-formats §1.2: `temperature` 0 to 1).
    OutOfRange,
    /// A value is not one of the accepted values (docs/api.md §2.2: `response_format` `json`,
    /// `verbose_json`, `srt`, `vtt`, `text`; a file format other than the accepted containers).
    UnsupportedValue,
    /// A value is only available without streaming (docs/api.md §2.2: `stream` only with `json` and
    /// `text`).
    NotStreamable,
    /// An uploaded file has more bytes than allowed (docs/api.md §2.2 and §8: at most 50 MB).
    TooLarge,
    /// Uploaded audio lasts longer than allowed (docs/api.md §2.2 and §8: at most 500 seconds).
    AudioTooLong,
}

impl Rule {
    /// Every rule, in the order of the table in the module documentation.
    pub const ALL: [Rule; 8] = [
        Rule::Required,
        Rule::TooLong,
        Rule::TooLongForFormat,
        Rule::OutOfRange,
        Rule::UnsupportedValue,
        Rule::NotStreamable,
        Rule::TooLarge,
        Rule::AudioTooLong,
    ];

    /// The stable machine-readable code of the rule, e.g. `"too_long_for_format"`.
    ///
    /// ```
    /// use tollgate_compat_audio::Rule;
    ///
    /// assert_eq!(Rule::TooLongForFormat.code(), "too_long_for_format");
    /// assert_eq!(Rule::OutOfRange.to_string(), "out_of_range");
    /// ```
    pub const fn code(&self) -> &'static str {
        match self {
            Rule::Required => "required",
            Rule::TooLong => "too_long",
            Rule::TooLongForFormat => "too_long_for_format",
            Rule::OutOfRange => "out_of_range",
            Rule::UnsupportedValue => "unsupported_value",
            Rule::NotStreamable => "not_streamable",
            Rule::TooLarge => "too_large",
            Rule::AudioTooLong => "audio_too_long",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A broken rule: which field (a JSON path such as `input` or `voice.id`, or a form field such as
/// `response_format`), which rule, and a
/// message for the API user that names both.
///
/// ```
/// use tollgate_compat_audio::{FieldError, Rule};
///
/// let err = FieldError::new("voice", Rule::Required, "'voice' is required");
/// assert_eq!(err.to_string(), "'voice' is required");
/// assert_eq!((err.field.as_str(), err.rule.code()), ("voice", "required"));
/// ```
pub type FieldError = tollgate_field_error::FieldError<Rule>;

impl tollgate_field_error::Rule for Rule {
    fn code(&self) -> &'static str {
        Rule::code(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_codes_are_unique_snake_case() {
        let codes: Vec<&str> = Rule::ALL.iter().map(Rule::code).collect();
        for (i, code) in codes.iter().enumerate() {
            assert!(
                code.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{code}"
            );
            assert!(!codes[..i].contains(code), "duplicate code {code}");
        }
    }
}
