//! Field-level errors, shared by the resources of this crate.
//!
//! A request that breaks a rule is refused with a [`FieldError`]: the JSON path of the offending
//! value (`text`, `voice_setting.voice_id`, `audio_setting.format`, `output_format`, ...), the
//! [`Rule`] it broke (with a stable snake_case code), and a sentence for the API user that names
//! both. In the `t2a_v2` format it is answered as a [`BaseResp`](crate::BaseResp) with status
//! code 2013, invalid parameters (wire-formats §3.4), and the message as `status_msg` (the
//! `From<&FieldError>` conversion of [`BaseResp`](crate::BaseResp)). In the `speech_to_text`
//! format it is answered with HTTP 400 and an OpenAI-style [`SttError`](crate::SttError)
//! (wire-formats §4): `param` is the field (a form field such as `response_format` or
//! `stream`), `code` the rule's code.
//!
//! | [`Rule`] | Code | Broken when |
//! |---|---|---|
//! | [`Required`](Rule::Required) | `required` | a required value is missing or empty |
//! | [`TooLong`](Rule::TooLong) | `too_long` | a text has more characters than its limit |
//! | [`TooLongForFormat`](Rule::TooLongForFormat) | `too_long_for_format` | a text is over the limit of the requested audio format |
//! | [`OutOfRange`](Rule::OutOfRange) | `out_of_range` | a number lies outside its range (or is not a finite number) |
//! | [`UnsupportedValue`](Rule::UnsupportedValue) | `unsupported_value` | a value is not one of the accepted values |
//! | [`NotStreamable`](Rule::NotStreamable) | `not_streamable` | a value is only available without streaming |
//! | [`Unavailable`](Rule::Unavailable) | `unavailable` | a feature of the vendor format that this service does not offer |

use std::fmt;

/// A rule of the format, with a stable snake_case code (see [`Rule::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A required value is missing or empty (`"model": ""`, no `voice_setting.voice_id`).
    Required,
    /// A text has more characters than allowed (`text` at most 10,000 characters).
    TooLong,
    /// A text has more characters than allowed for the requested audio format (docs/api.md §2.4 and §8:
    /// at most 2,000 characters for `wav`, `flac` and `pcm`).
    TooLongForFormat,
    /// A number is outside its range, or not a finite number (`voice_setting.speed` 0.5 to 2).
    OutOfRange,
    /// A value is not one of the accepted values (`audio_setting.sample_rate`, `.format`, ...;
    /// in `speech_to_text`, `response_format`, `timestamp_level` and `stream`).
    UnsupportedValue,
    /// A value is only available without streaming (wire-formats §3.1: `wav` is non-stream only;
    /// wire-formats §4: `speech_to_text` streams only with `response_format` `json`).
    NotStreamable,
    /// A feature this service does not offer (docs/api.md §2.4: download URLs, subtitles).
    Unavailable,
}

impl Rule {
    /// Every rule, in the order of the table in the module documentation.
    pub const ALL: [Rule; 7] = [
        Rule::Required,
        Rule::TooLong,
        Rule::TooLongForFormat,
        Rule::OutOfRange,
        Rule::UnsupportedValue,
        Rule::NotStreamable,
        Rule::Unavailable,
    ];

    /// The stable machine-readable code of the rule, e.g. `"unsupported_value"`.
    ///
    /// ```
    /// use tollgate_vendor_audio::Rule;
    ///
    /// assert_eq!(Rule::NotStreamable.code(), "not_streamable");
    /// assert_eq!(Rule::Unavailable.to_string(), "unavailable");
    /// ```
    pub const fn code(&self) -> &'static str {
        match self {
            Rule::Required => "required",
            Rule::TooLong => "too_long",
            Rule::TooLongForFormat => "too_long_for_format",
            Rule::OutOfRange => "out_of_range",
            Rule::UnsupportedValue => "unsupported_value",
            Rule::NotStreamable => "not_streamable",
            Rule::Unavailable => "unavailable",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A broken rule: which field (a JSON path such as `voice_setting.voice_id`), which rule, and a
/// message for the API user that names both.
///
/// ```
/// use tollgate_vendor_audio::{FieldError, Rule};
///
/// let err = FieldError::new("text", Rule::Required, "'text' is required and must not be empty");
/// assert_eq!(err.to_string(), "'text' is required and must not be empty");
/// assert_eq!((err.field.as_str(), err.rule.code()), ("text", "required"));
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
