//! Field-level errors, and Ark's error body (wire-formats §5.4).
//!
//! A request that breaks a rule is refused with a [`FieldError`]: the JSON path of the offending
//! value (`model`, `content[2].image_url.url`, `duration`, ...) or, for a list query, the query
//! parameter (`page_size`, `filter.status`), the [`Rule`] it broke (with a stable snake_case
//! code), and a sentence for the API user that names both. It is answered as an [`ArkError`]
//! with HTTP 400 (`From<&FieldError>`): `type` = `BadRequest`, `code` = `MissingParameter` for
//! [`Rule::Required`] and `InvalidParameter` otherwise, `param` = the field.
//!
//! | [`Rule`] | Code | Broken when |
//! |---|---|---|
//! | [`Required`](Rule::Required) | `required` | a required value is missing or empty |
//! | [`UnsupportedValue`](Rule::UnsupportedValue) | `unsupported_value` | a value is not one of the accepted values (model series, resolution, ratio, role, content type, status filter) |
//! | [`OutOfRange`](Rule::OutOfRange) | `out_of_range` | a number lies outside its range (duration, page number, page size) |
//! | [`NotCombinable`](Rule::NotCombinable) | `not_combinable` | first/last frames together with reference images (docs/api.md §2.7 content rule 1) |
//! | [`TooMany`](Rule::TooMany) | `too_many` | more items of a kind than allowed (reference images, reference videos, frames) |
//! | [`TooLong`](Rule::TooLong) | `too_long` | the reference videos last longer in total than allowed |
//! | [`InvalidUrl`](Rule::InvalidUrl) | `invalid_url` | a media URL is not an `http(s)` URL (or, for images, an inline image) that can be read unambiguously |
//! | [`NotPublic`](Rule::NotPublic) | `not_public` | a media URL points to a loopback, private, link-local or otherwise non-public host (docs/api.md §2.7 content rule 4) |
//! | [`TooLarge`](Rule::TooLarge) | `too_large` | inline `data:` media is larger than allowed |
//! | [`Malformed`](Rule::Malformed) | `malformed` | a value has the wrong shape (a content item of a known type whose fields have the wrong type; bad percent-encoding in a query) |
//! | [`Conflicting`](Rule::Conflicting) | `conflicting` | an inline prompt flag contradicts the structured field, or the same flag is given twice with different values |

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// A rule of the format, with a stable snake_case code (see [`Rule::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A required value is missing or empty (`"model": ""`, no `content`, an empty
    /// `video_url.url`).
    Required,
    /// A value is not one of the accepted values (docs/api.md §2.7: `resolution` `480p` or `720p`, the
    /// `ratio` list, the image roles; a model outside the 2.0 and 2.5 series).
    UnsupportedValue,
    /// A number is outside its range (docs/api.md §2.7: `duration` 4 to 15 s for 2.0, 4 to 30 s for
    /// 2.5; a list query's `page_num` and `page_size`).
    OutOfRange,
    /// docs/api.md §2.7 content rule 1: first/last frames cannot be combined with reference images.
    NotCombinable,
    /// docs/api.md §2.7 content rules 2 and 3: at most 30 reference images, at most 3 (2.0) or 10 (2.5)
    /// reference videos; at most one first frame and one last frame.
    TooMany,
    /// docs/api.md §2.7 content rule 3: reference videos at most 15 s (2.0) or 30 s (2.5) in total.
    TooLong,
    /// A media URL that is not an `http(s)` URL this crate can read unambiguously (another
    /// scheme, userinfo, a numeric host that is not a dotted-quad, a malformed `data:` URL).
    InvalidUrl,
    /// docs/api.md §2.7 content rule 4: media URLs must be publicly accessible; loopback, private,
    /// link-local and other non-public hosts are refused.
    NotPublic,
    /// Inline `data:` media larger than allowed
    /// ([`MAX_INLINE_IMAGE_BYTES`](crate::series::MAX_INLINE_IMAGE_BYTES)).
    TooLarge,
    /// A value has the wrong shape: a content item of a known `type` whose fields have the wrong
    /// JSON type; bad percent-encoding in a list query; an inline prompt flag with a value of
    /// the wrong type.
    Malformed,
    /// The same setting given twice with different values: an inline prompt flag against the
    /// structured field (wire-formats §5.1), or the same flag twice.
    Conflicting,
}

impl Rule {
    /// Every rule, in the order of the table in the module documentation.
    pub const ALL: [Rule; 11] = [
        Rule::Required,
        Rule::UnsupportedValue,
        Rule::OutOfRange,
        Rule::NotCombinable,
        Rule::TooMany,
        Rule::TooLong,
        Rule::InvalidUrl,
        Rule::NotPublic,
        Rule::TooLarge,
        Rule::Malformed,
        Rule::Conflicting,
    ];

    /// The stable machine-readable code of the rule, e.g. `"not_combinable"`.
    ///
    /// ```
    /// use tollgate_clip_tasks::Rule;
    ///
    /// assert_eq!(Rule::NotCombinable.code(), "not_combinable");
    /// assert_eq!(Rule::NotPublic.to_string(), "not_public");
    /// ```
    pub const fn code(&self) -> &'static str {
        match self {
            Rule::Required => "required",
            Rule::UnsupportedValue => "unsupported_value",
            Rule::OutOfRange => "out_of_range",
            Rule::NotCombinable => "not_combinable",
            Rule::TooMany => "too_many",
            Rule::TooLong => "too_long",
            Rule::InvalidUrl => "invalid_url",
            Rule::NotPublic => "not_public",
            Rule::TooLarge => "too_large",
            Rule::Malformed => "malformed",
            Rule::Conflicting => "conflicting",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A broken rule: which field (a JSON path such as `content[2].image_url.url`, or a query
/// parameter such as `page_size`), which rule, and a message for the API user that names both.
///
/// ```
/// use tollgate_clip_tasks::{FieldError, Rule};
///
/// let err = FieldError::new("duration", Rule::OutOfRange, "'duration' must be between 4 and 15");
/// assert_eq!(err.to_string(), "'duration' must be between 4 and 15");
/// assert_eq!((err.field.as_str(), err.rule.code()), ("duration", "out_of_range"));
/// ```
pub type FieldError = tollgate_field_error::FieldError<Rule>;

impl tollgate_field_error::Rule for Rule {
    fn code(&self) -> &'static str {
        Rule::code(self)
    }
}

/// Ark's error body (wire-formats §5.4): `{"error": {"code", "message", "param", "type"}}`.
///
/// The vendor SDK reads `body["error"]`, falling back to the body itself when there is no
/// `error` key; [`ArkError::parse`] does the same, so an upstream adapter can read either.
///
/// ```
/// use tollgate_clip_tasks::{ArkError, FieldError, Rule};
///
/// let err = FieldError::new("content", Rule::Required, "'content' is required");
/// let body = ArkError::from(&err);
/// assert_eq!(body.http_status(), 400);
/// assert_eq!(
///     serde_json::to_value(&body)?,
///     serde_json::json!({"error": {"code": "MissingParameter", "message": "'content' is required",
///                                  "param": "content", "type": "BadRequest"}})
/// );
///
/// let upstream = ArkError::parse(br#"{"code": "InvalidEndpoint.NotFound", "message": "no such model",
///                                    "type": "NotFound"}"#);
/// assert_eq!(upstream.map(|e| e.http_status()), Some(404));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ArkError {
    /// The error itself.
    pub error: ArkErrorDetail,
}

/// The `error` object of an [`ArkError`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ArkErrorDetail {
    /// A string code, e.g. `MissingParameter`, `InvalidParameter`, `AuthenticationError`,
    /// `InvalidEndpointOrModel.NotFound`, `RateLimitExceeded.EndpointRPMExceeded`.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub code: String,
    /// A sentence for the API user.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub message: String,
    /// The offending parameter, or empty.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub param: String,
    /// The error type, which follows the HTTP status: `BadRequest`, `Unauthorized`, `Forbidden`,
    /// `NotFound`, `TooManyRequests`, `InternalServerError`, ...
    #[serde(rename = "type", default, deserialize_with = "null_as_empty")]
    pub kind: String,
    /// Fields this crate does not model, kept so they pass through unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The error `type`s of wire-formats §5.4 and the HTTP status each goes with.
pub const ERROR_TYPES: [(&str, u16); 10] = [
    ("BadRequest", 400),
    ("Unauthorized", 401),
    ("Forbidden", 403),
    ("NotFound", 404),
    ("TooManyRequests", 429),
    ("InternalServerError", 500),
    ("NotImplemented", 501),
    ("BadGateway", 502),
    ("ServiceUnavailable", 503),
    ("GatewayTimeout", 504),
];

impl ArkError {
    /// An error body with the given parts.
    pub fn new(
        kind: impl Into<String>,
        code: impl Into<String>,
        message: impl Into<String>,
        param: impl Into<String>,
    ) -> Self {
        Self {
            error: ArkErrorDetail {
                code: code.into(),
                message: message.into(),
                param: param.into(),
                kind: kind.into(),
                extra: Map::new(),
            },
        }
    }

    /// Reads an error body the way the vendor SDK does: the `error` object when there is one,
    /// otherwise the body itself. `None` when the bytes are not a JSON object.
    pub fn parse(body: &[u8]) -> Option<ArkError> {
        let value: Value = serde_json::from_slice(body).ok()?;
        let mut object = match value {
            Value::Object(object) => object,
            _ => return None,
        };
        let inner = match object.remove("error") {
            Some(Value::Object(inner)) => Value::Object(inner),
            Some(other) => {
                object.insert("error".to_owned(), other);
                Value::Object(object)
            }
            None => Value::Object(object),
        };
        let error = serde_json::from_value(inner).ok()?;
        Some(ArkError { error })
    }

    /// The HTTP status that goes with the error's `type` ([`ERROR_TYPES`]); 500 for a type not
    /// in that list.
    pub fn http_status(&self) -> u16 {
        ERROR_TYPES
            .iter()
            .find(|(kind, _)| *kind == self.error.kind)
            .map_or(500, |(_, status)| *status)
    }
}

impl From<&FieldError> for ArkError {
    /// HTTP 400, `type` `BadRequest`; `code` `MissingParameter` for a missing value
    /// ([`Rule::Required`]) and `InvalidParameter` for every other rule; `param` the field.
    fn from(err: &FieldError) -> Self {
        let code = match err.rule {
            Rule::Required => "MissingParameter",
            _ => "InvalidParameter",
        };
        ArkError::new("BadRequest", code, err.message.clone(), err.field.clone())
    }
}

pub(crate) fn null_as_empty<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
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
