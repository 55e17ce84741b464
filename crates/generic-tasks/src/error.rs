//! Errors: the field-level [`FieldError`] of validation, and the OpenAI-style [`ErrorBody`] that
//! this family answers with.
//!
//! A create request that breaks a rule is refused with a [`FieldError`]: the field of the
//! offending value (`prompt`, `duration`, `resolution`, `aspect_ratio`, `seed`, ...), the [`Rule`]
//! it broke, and a sentence for the API user that names both. DESIGN §7: `/v1/video/*` answers in
//! OpenAI's error shape (wire-formats §1.3), so a field error becomes an [`ErrorBody`] with HTTP
//! 400, `type` = [`INVALID_REQUEST_ERROR`], `param` = [`FieldError::field`], `code` =
//! [`Rule::code`] and `message` = [`FieldError::message`] (the `From<&FieldError>` conversion).
//!
//! | [`Rule`] | Code | Broken when |
//! |---|---|---|
//! | [`Required`](Rule::Required) | `required` | a required value is missing or empty |
//! | [`TooLong`](Rule::TooLong) | `too_long` | a text has more characters than its limit |
//! | [`OutOfRange`](Rule::OutOfRange) | `out_of_range` | a duration lies outside the model's range (or is not a finite positive number) |
//! | [`UnsupportedValue`](Rule::UnsupportedValue) | `unsupported_value` | a resolution or aspect ratio is not one the model offers |
//! | [`UnsupportedParameter`](Rule::UnsupportedParameter) | `unsupported_parameter` | a parameter is given to a model that does not take it at all |

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// A rule of the format, with a stable snake_case code (see [`Rule::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A required value is missing or empty (`"model": ""`, no `prompt`, a prompt of blanks).
    Required,
    /// A text has more characters than allowed (`prompt` and `negative_prompt` at most
    /// [`MAX_PROMPT_CHARS`](crate::validate::MAX_PROMPT_CHARS)).
    TooLong,
    /// A duration is outside the model's range, or not a finite positive number (docs/api.md §2.8 and
    /// §8: the per-model duration ranges; `omni` is fixed at 4 seconds).
    OutOfRange,
    /// A value is not one the model offers (docs/api.md §2.8: `resolution` and `aspect_ratio` depend on
    /// the model).
    UnsupportedValue,
    /// A parameter is given to a model that does not take it (docs/api.md §2.8: `seed` and
    /// `negative_prompt` only "for models that support it", `sound` and `watermark` only for
    /// `wave-3-0-video`).
    UnsupportedParameter,
}

impl Rule {
    /// Every rule, in the order of the table in the module documentation.
    pub const ALL: [Rule; 5] = [
        Rule::Required,
        Rule::TooLong,
        Rule::OutOfRange,
        Rule::UnsupportedValue,
        Rule::UnsupportedParameter,
    ];

    /// The stable machine-readable code of the rule, e.g. `"unsupported_parameter"`.
    ///
    /// ```
    /// use tollgate_generic_tasks::Rule;
    ///
    /// assert_eq!(Rule::UnsupportedParameter.code(), "unsupported_parameter");
    /// assert_eq!(Rule::OutOfRange.to_string(), "out_of_range");
    /// ```
    pub const fn code(&self) -> &'static str {
        match self {
            Rule::Required => "required",
            Rule::TooLong => "too_long",
            Rule::OutOfRange => "out_of_range",
            Rule::UnsupportedValue => "unsupported_value",
            Rule::UnsupportedParameter => "unsupported_parameter",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A broken rule: which field, which rule, and a message for the API user that names both.
///
/// ```
/// use tollgate_generic_tasks::{FieldError, Rule};
///
/// let err = FieldError::new(
///     "sound",
///     Rule::UnsupportedParameter,
///     "'sound' is not supported by imagine-video",
/// );
/// assert_eq!(err.to_string(), "'sound' is not supported by imagine-video");
/// assert_eq!((err.field.as_str(), err.rule.code()), ("sound", "unsupported_parameter"));
/// ```
pub type FieldError = tollgate_field_error::FieldError<Rule>;

impl tollgate_field_error::Rule for Rule {
    fn code(&self) -> &'static str {
        Rule::code(self)
    }
}

/// wire-formats §1.3: the `type` of an error about the request (400, 404).
pub const INVALID_REQUEST_ERROR: &str = "invalid_request_error";

/// wire-formats §1.3: the `type` of an error on the service's side (500, 503).
pub const SERVER_ERROR: &str = "server_error";

/// The OpenAI-style error body of `/v1/video/*` (DESIGN §7, wire-formats §1.3):
/// `{"error": {"message", "type", "param", "code"}}`.
///
/// OpenAI's schema has all four keys always present, `param` and `code` possibly `null`; this
/// type serializes exactly that. Decoding is lenient, so that it also reads what a generic
/// upstream answers: only `message` is needed, a missing `type` decodes as an empty string, and a
/// numeric `code` decodes as its decimal text.
///
/// ```
/// use tollgate_generic_tasks::{ErrorBody, FieldError, Rule};
///
/// let err = FieldError::new("seed", Rule::UnsupportedParameter, "'seed' is not supported by omni");
/// let body = ErrorBody::from(&err);
/// assert_eq!(
///     serde_json::to_string(&body)?,
///     r#"{"error":{"message":"'seed' is not supported by omni","type":"invalid_request_error","param":"seed","code":"unsupported_parameter"}}"#
/// );
///
/// let upstream: ErrorBody = serde_json::from_str(r#"{"error":{"message":"busy","code":503}}"#)?;
/// assert_eq!(upstream.error.code.as_deref(), Some("503"));
/// assert_eq!(upstream.message(), "busy");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// The `error` object of an [`ErrorBody`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// A sentence for the API user; empty when absent.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub message: String,
    /// The error type, e.g. [`INVALID_REQUEST_ERROR`]; empty when absent.
    #[serde(rename = "type", default, deserialize_with = "null_as_empty")]
    pub kind: String,
    /// The offending field, or `null`.
    #[serde(default)]
    pub param: Option<String>,
    /// A machine-readable code (e.g. a [`Rule`]'s code, `model_not_found`), or `null`.
    #[serde(default, deserialize_with = "opt_string_or_number")]
    pub code: Option<String>,
}

impl ErrorBody {
    /// An error of the given `type` with a message; no `param`, no `code`.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            error: ErrorDetail {
                message: message.into(),
                kind: kind.into(),
                param: None,
                code: None,
            },
        }
    }

    /// The same error with `param` set.
    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.error.param = Some(param.into());
        self
    }

    /// The same error with `code` set.
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.error.code = Some(code.into());
        self
    }

    /// wire-formats §1.3: the answer to an unknown model, HTTP 404, `param` `model`, `code`
    /// `model_not_found`.
    ///
    /// ```
    /// use tollgate_generic_tasks::ErrorBody;
    ///
    /// let body = ErrorBody::model_not_found("wave-9");
    /// assert_eq!(body.error.code.as_deref(), Some("model_not_found"));
    /// assert_eq!(body.message(), "The model `wave-9` does not exist or you do not have access to it.");
    /// ```
    pub fn model_not_found(model: &str) -> Self {
        Self::new(
            INVALID_REQUEST_ERROR,
            format!("The model `{model}` does not exist or you do not have access to it."),
        )
        .with_param("model")
        .with_code("model_not_found")
    }

    /// docs/api.md §4 rule 2: the answer to a task id that is unknown (or not the caller's), HTTP 404,
    /// `code` `task_not_found`.
    pub fn task_not_found(task_id: &str) -> Self {
        Self::new(
            INVALID_REQUEST_ERROR,
            format!("No video task with id '{task_id}' was found."),
        )
        .with_param("task_id")
        .with_code("task_not_found")
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.error.message
    }
}

/// A field error as OpenAI's error body: `type` `invalid_request_error`, `param` the field,
/// `code` the rule's code, `message` the error's sentence. It is answered with HTTP 400.
impl From<&FieldError> for ErrorBody {
    fn from(err: &FieldError) -> Self {
        Self::new(INVALID_REQUEST_ERROR, err.message.clone())
            .with_param(err.field.clone())
            .with_code(err.rule.code())
    }
}

impl From<FieldError> for ErrorBody {
    fn from(err: FieldError) -> Self {
        Self::from(&err)
    }
}

fn null_as_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
}

/// A string, or a number read as its decimal text, or `null`.
pub(crate) fn opt_string_or_number<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Code {
        Text(String),
        Int(i64),
        Float(f64),
    }
    Ok(
        Option::<Code>::deserialize(deserializer)?.map(|code| match code {
            Code::Text(text) => text,
            Code::Int(n) => n.to_string(),
            Code::Float(x) => x.to_string(),
        }),
    )
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
