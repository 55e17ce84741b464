//! Field-level errors, and the vendor's error body (wire-formats §6.4).
//!
//! A request that breaks a rule is refused with a [`FieldError`]: the JSON path of the offending
//! value in the request's own spelling (camelCase for the native format: `contents[1].role`,
//! `generationConfig.thinkingConfig.thinkingBudget`; snake_case for a chat-completions request
//! seen by the [bridge](crate::bridge): `messages[2].tool_calls[0].function.arguments`), the
//! [`Rule`] it broke (with a stable snake_case code), and a sentence for the API user that names
//! both. DESIGN §7: `/v1beta` answers in Google's RPC shape, so a field error becomes a
//! [`GoogleError`] with HTTP 400 `INVALID_ARGUMENT` (the `From<&FieldError>` conversion), whose
//! `details` carry a `google.rpc.BadRequest` field violation naming the field.
//!
//! | [`Rule`] | Code | Broken when |
//! |---|---|---|
//! | [`Required`](Rule::Required) | `required` | a required value is missing or empty (`contents`, a turn's `parts`, an empty part) |
//! | [`UnsupportedValue`](Rule::UnsupportedValue) | `unsupported_value` | a value is not one of the accepted values (a role, a `thinkingLevel`, a `reasoning_effort`) |
//! | [`UnsupportedParameter`](Rule::UnsupportedParameter) | `unsupported_parameter` | a parameter is given to a model that does not take it (`thinkingConfig` on a model that does not think, `thinkingLevel` before generation 3) |
//! | [`OutOfRange`](Rule::OutOfRange) | `out_of_range` | a number lies outside its range (`thinkingBudget`, `maxOutputTokens`, `candidateCount`) |
//! | [`NotCombinable`](Rule::NotCombinable) | `not_combinable` | two parameters that exclude each other (`thinkingBudget` with `thinkingLevel`) |
//! | [`Malformed`](Rule::Malformed) | `malformed` | a value has the wrong shape (tool-call `arguments` that are not a JSON object, a `data:` URL that is not base64) |
//! | [`InvalidUrl`](Rule::InvalidUrl) | `invalid_url` | an image URL that is neither an `http(s)` URL nor a `data:` URL |

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// A rule of the format, with a stable snake_case code (see [`Rule::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A required value is missing or empty (no `contents`, a turn without `parts`, a part with
    /// no data, an `inlineData` without `data`, a `functionCall` without `name`).
    Required,
    /// A value is not one of the accepted values (a `role` other than `user` or `model`, a
    /// `thinkingLevel` the model does not offer, an unknown `reasoning_effort`).
    UnsupportedValue,
    /// A parameter is given to a model that does not take it (docs/api.md §2.9: only thinking models
    /// take `thinkingConfig`; `thinkingLevel` only from generation 3).
    UnsupportedParameter,
    /// A number is outside its range (`thinkingBudget` outside the model's range,
    /// `maxOutputTokens` below 1 or above the model's cap, `candidateCount` outside 1 to 8).
    OutOfRange,
    /// Two parameters that exclude each other: `thinkingBudget` and `thinkingLevel`
    /// (wire-formats §6.1: "don't send both").
    NotCombinable,
    /// A value has the wrong shape: tool-call `arguments` that are not a JSON object, a `data:`
    /// URL without base64 data, a tool or tool choice of an unknown form.
    Malformed,
    /// An image URL that is neither an `http(s)` URL nor a base64 `data:` URL.
    InvalidUrl,
}

impl Rule {
    /// Every rule, in the order of the table in the module documentation.
    pub const ALL: [Rule; 7] = [
        Rule::Required,
        Rule::UnsupportedValue,
        Rule::UnsupportedParameter,
        Rule::OutOfRange,
        Rule::NotCombinable,
        Rule::Malformed,
        Rule::InvalidUrl,
    ];

    /// The stable machine-readable code of the rule, e.g. `"not_combinable"`.
    ///
    /// ```
    /// use tollgate_native_genai::Rule;
    ///
    /// assert_eq!(Rule::NotCombinable.code(), "not_combinable");
    /// assert_eq!(Rule::OutOfRange.to_string(), "out_of_range");
    /// ```
    pub const fn code(&self) -> &'static str {
        match self {
            Rule::Required => "required",
            Rule::UnsupportedValue => "unsupported_value",
            Rule::UnsupportedParameter => "unsupported_parameter",
            Rule::OutOfRange => "out_of_range",
            Rule::NotCombinable => "not_combinable",
            Rule::Malformed => "malformed",
            Rule::InvalidUrl => "invalid_url",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A broken rule: which field (a JSON path such as `contents[1].role`), which rule, and a message
/// for the API user that names both.
///
/// ```
/// use tollgate_native_genai::{FieldError, Rule};
///
/// let err = FieldError::new(
///     "generationConfig.candidateCount",
///     Rule::OutOfRange,
///     "'generationConfig.candidateCount' must be between 1 and 8, not 9",
/// );
/// assert_eq!(err.to_string(), "'generationConfig.candidateCount' must be between 1 and 8, not 9");
/// assert_eq!(err.rule.code(), "out_of_range");
/// ```
pub type FieldError = tollgate_field_error::FieldError<Rule>;

impl tollgate_field_error::Rule for Rule {
    fn code(&self) -> &'static str {
        Rule::code(self)
    }
}

/// A [`Rule::Required`] error with the standard message.
pub(crate) fn required(field: impl Into<String>) -> FieldError {
    let field = field.into();
    let message = format!("'{field}' is required and must not be empty");
    FieldError::new(field, Rule::Required, message)
}

/// The vendor's error body (wire-formats §6.4), Google RPC style:
/// `{"error": {"code": 400, "message": "...", "status": "INVALID_ARGUMENT", "details": [...]}}`.
///
/// [`GoogleError::parse`] reads it from an upstream answer, also in the array-wrapped form the
/// non-SSE `streamGenerateContent` uses (`[{"error": {...}}]`).
///
/// ```
/// use tollgate_native_genai::{FieldError, GoogleError, Rule};
///
/// let err = FieldError::new("contents", Rule::Required, "'contents' is required");
/// let body = GoogleError::from(&err);
/// assert_eq!((body.http_status(), body.error.status.as_str()), (400, "INVALID_ARGUMENT"));
/// assert_eq!(
///     body.error.details.as_ref().map(|d| d[0]["fieldViolations"][0]["field"].clone()),
///     Some(serde_json::json!("contents"))
/// );
///
/// let upstream = GoogleError::parse(
///     br#"[{"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}}]"#,
/// );
/// assert_eq!(upstream.map(|e| e.error.code), Some(429));
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GoogleError {
    /// The error itself.
    pub error: GoogleErrorDetail,
}

/// The `error` object of a [`GoogleError`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GoogleErrorDetail {
    /// The HTTP status code, e.g. 400.
    #[serde(default)]
    pub code: u16,
    /// A sentence for the API user.
    #[serde(default)]
    pub message: String,
    /// The RPC status name, e.g. `INVALID_ARGUMENT` (see [`status_name`]).
    #[serde(default)]
    pub status: String,
    /// The RPC details (`google.rpc.ErrorInfo`, `google.rpc.BadRequest`, ...), when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Fields this crate does not model, kept so they pass through unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The RPC status names of the usual HTTP statuses (wire-formats §6.4).
pub const STATUS_NAMES: [(u16, &str); 12] = [
    (400, "INVALID_ARGUMENT"),
    (401, "UNAUTHENTICATED"),
    (403, "PERMISSION_DENIED"),
    (404, "NOT_FOUND"),
    (409, "ABORTED"),
    (413, "INVALID_ARGUMENT"),
    (429, "RESOURCE_EXHAUSTED"),
    (499, "CANCELLED"),
    (500, "INTERNAL"),
    (501, "UNIMPLEMENTED"),
    (503, "UNAVAILABLE"),
    (504, "DEADLINE_EXCEEDED"),
];

/// The RPC status name that goes with an HTTP status ([`STATUS_NAMES`]); `UNKNOWN` for a status
/// not in the table.
///
/// ```
/// use tollgate_native_genai::error::status_name;
///
/// assert_eq!(status_name(404), "NOT_FOUND");
/// assert_eq!(status_name(418), "UNKNOWN");
/// ```
pub fn status_name(http_status: u16) -> &'static str {
    STATUS_NAMES
        .iter()
        .find(|(code, _)| *code == http_status)
        .map_or("UNKNOWN", |(_, name)| name)
}

impl GoogleError {
    /// An error body with the given HTTP status code, RPC status name and message.
    pub fn new(code: u16, status: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            error: GoogleErrorDetail {
                code,
                message: message.into(),
                status: status.into(),
                details: None,
                extra: Map::new(),
            },
        }
    }

    /// The HTTP status to answer with: the body's `code`, or 500 when it is not an error status.
    pub fn http_status(&self) -> u16 {
        if (400..=599).contains(&self.error.code) {
            self.error.code
        } else {
            500
        }
    }

    /// Reads an error body: `{"error": {...}}`, or the same wrapped in a JSON array (the first
    /// element that is an error). `None` when the bytes are not such a body.
    pub fn parse(body: &[u8]) -> Option<GoogleError> {
        let value: Value = serde_json::from_slice(body).ok()?;
        Self::from_value(value)
    }

    /// [`GoogleError::parse`] of an already decoded JSON value.
    pub fn from_value(value: Value) -> Option<GoogleError> {
        match value {
            Value::Array(items) => items.into_iter().find_map(Self::from_value),
            Value::Object(ref object) if object.get("error").is_some_and(Value::is_object) => {
                serde_json::from_value(value).ok()
            }
            _ => None,
        }
    }
}

impl From<&FieldError> for GoogleError {
    fn from(err: &FieldError) -> Self {
        let mut body = GoogleError::new(400, "INVALID_ARGUMENT", &err.message);
        body.error.details = Some(json!([{
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{
                "field": err.field,
                "description": err.message,
                "reason": err.rule.code(),
            }],
        }]));
        body
    }
}

impl From<FieldError> for GoogleError {
    fn from(err: FieldError) -> Self {
        GoogleError::from(&err)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_snake_case() {
        let mut codes: Vec<&str> = Rule::ALL.iter().map(Rule::code).collect();
        assert!(
            codes
                .iter()
                .all(|c| c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_'))
        );
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), Rule::ALL.len());
    }

    #[test]
    fn parses_plain_and_array_wrapped_errors() {
        let plain = br#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",
            "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}"#;
        let err = GoogleError::parse(plain).unwrap();
        assert_eq!(err.error.code, 400);
        assert_eq!(err.error.status, "INVALID_ARGUMENT");
        assert_eq!(
            err.error.details.as_ref().unwrap()[0]["reason"],
            "API_KEY_INVALID"
        );
        // Round trip keeps everything.
        let back = serde_json::to_value(&err).unwrap();
        let orig: Value = serde_json::from_slice(plain).unwrap();
        assert_eq!(back, orig);

        let wrapped = br#"[{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}]"#;
        let err = GoogleError::parse(wrapped).unwrap();
        assert_eq!(
            (err.http_status(), err.error.status.as_str()),
            (503, "UNAVAILABLE")
        );
    }

    #[test]
    fn refuses_what_is_not_an_error() {
        assert!(GoogleError::parse(b"not json").is_none());
        assert!(GoogleError::parse(br#"{"candidates":[]}"#).is_none());
        assert!(GoogleError::parse(br#"{"error":"text"}"#).is_none());
        assert!(GoogleError::parse(br#"[{"candidates":[]}]"#).is_none());
        assert!(GoogleError::parse(b"[]").is_none());
    }

    #[test]
    fn non_error_code_answers_500() {
        let err = GoogleError::new(200, "OK", "odd");
        assert_eq!(err.http_status(), 500);
    }

    #[test]
    fn field_error_becomes_invalid_argument() {
        let err = FieldError::new("contents[1].role", Rule::UnsupportedValue, "bad role");
        let body = serde_json::to_value(GoogleError::from(err)).unwrap();
        assert_eq!(
            body,
            json!({"error": {"code": 400, "message": "bad role", "status": "INVALID_ARGUMENT",
                "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [{"field": "contents[1].role", "description": "bad role",
                        "reason": "unsupported_value"}]}]}})
        );
    }
}
