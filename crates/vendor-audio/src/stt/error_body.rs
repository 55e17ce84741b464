//! The error body of `speech_to_text`.

use serde::{Deserialize, Serialize};

use super::response::opt_string_or_number;
use crate::error::FieldError;

/// wire-formats §1.3: the `type` of an error about the request.
pub const INVALID_REQUEST_ERROR: &str = "invalid_request_error";

/// The error body of `speech_to_text` (wire-formats §4): OpenAI-style
/// `{"error": {"message": ...}, "request_id"?: ...}` with a real HTTP status, not `base_resp`.
///
/// Only `error.message` is confirmed; `type`, `param` and `code` follow OpenAI's error object
/// (wire-formats §1.3) and are optional both ways. A numeric `code` decodes as its decimal text,
/// since the vendor's code type is not confirmed.
///
/// ```
/// use tollgate_vendor_audio::stt::{validate, SttError, SttFormat, SttParams};
///
/// let upstream: SttError = serde_json::from_str(
///     r#"{"error":{"message":"audio longer than 500s"},"request_id":"r-1"}"#,
/// )?;
/// assert_eq!(upstream.error.message, "audio longer than 500s");
/// assert_eq!(upstream.request_id.as_deref(), Some("r-1"));
///
/// let mut params = SttParams::new("asr-1.0");
/// params.stream = true;
/// params.response_format = SttFormat::Vtt;
/// let err = validate(&params).unwrap_err();
/// assert_eq!(
///     serde_json::to_string(&SttError::from(&err))?,
///     r#"{"error":{"message":"'stream' is only available with response_format json, not vtt","type":"invalid_request_error","param":"stream","code":"not_streamable"}}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SttError {
    /// The error.
    pub error: SttErrorDetail,
    /// The upstream's request id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// The `error` object of an [`SttError`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SttErrorDetail {
    /// A sentence for the API user; empty when absent.
    #[serde(default)]
    pub message: String,
    /// The error type, e.g. [`INVALID_REQUEST_ERROR`].
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The offending field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// A machine-readable code, e.g. a [`Rule`](crate::Rule)'s code.
    #[serde(
        default,
        deserialize_with = "opt_string_or_number",
        skip_serializing_if = "Option::is_none"
    )]
    pub code: Option<String>,
}

impl SttError {
    /// An error with only a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            error: SttErrorDetail {
                message: message.into(),
                kind: None,
                param: None,
                code: None,
            },
            request_id: None,
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.error.message
    }
}

/// A field error as the vendor's error body: `type` `invalid_request_error`, `param` the field,
/// `code` the rule's code, `message` the error's sentence. It is answered with HTTP 400.
impl From<&FieldError> for SttError {
    fn from(err: &FieldError) -> Self {
        Self {
            error: SttErrorDetail {
                message: err.message.clone(),
                kind: Some(INVALID_REQUEST_ERROR.to_owned()),
                param: Some(err.field.clone()),
                code: Some(err.rule.code().to_owned()),
            },
            request_id: None,
        }
    }
}
