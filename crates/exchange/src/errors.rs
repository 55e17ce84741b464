//! Errors as clients see them: one meaning ([`ApiError`]), rendered in the error shape of the
//! endpoint's own vendor ([`Family`], DESIGN §7) with an honest HTTP status.

use http::StatusCode;
use serde::Serialize;

/// The four inbound families and their error shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `{error:{message,type,param,code}}` — `/v1/audio/*`, `/v1/embeddings`, `/v1/video/*`,
    /// `/v1/speech_to_text`, `/v1/chat/completions`.
    OpenAi,
    /// `{base_resp:{status_code,status_msg}}` — `/v1/t2a_v2`.
    T2a,
    /// `{error:{code,message,param,type}}` with Ark's string codes — `/api/v3`.
    Ark,
    /// `{error:{code,message,status}}` — `/v1beta`, `/v1/models/…:…`.
    Google,
}

/// How a route's errors are shaped: its family's body, wrapped in a JSON array where the answer
/// would be one (the native stream without `alt=sse`, wire-formats §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// The family.
    pub family: Family,
    /// Wrapped in an array.
    pub array: bool,
}

impl From<Family> for Shape {
    fn from(family: Family) -> Shape {
        Shape {
            family,
            array: false,
        }
    }
}

/// What went wrong, independent of how a family spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A field broke a rule, or the body is not what the endpoint takes. 400.
    InvalidRequest,
    /// No credential was presented. 401.
    MissingCredential,
    /// The credential is not a known key. 401.
    InvalidCredential,
    /// The key or its account is disabled. 403.
    Forbidden,
    /// Unknown route, model or task. 404.
    NotFound,
    /// Known route, other method. 405.
    MethodNotAllowed,
    /// The change conflicts with what exists: a taken name, a reused idempotency key (the
    /// admin API). 409.
    Conflict,
    /// The client stopped sending its request body. 408.
    RequestTimeout,
    /// The body is over the endpoint's limit. 413.
    PayloadTooLarge,
    /// The body is not of a type the endpoint takes. 415.
    UnsupportedMediaType,
    /// The balance does not cover the hold. 429 (OpenAI's `insufficient_quota`).
    InsufficientBalance,
    /// Too many requests. 429.
    RateLimited,
    /// Something broke inside the gateway. 500.
    Internal,
    /// The endpoint is not built yet, or not supported. 501.
    NotImplemented,
    /// The upstream failed or answered nonsense. 502.
    UpstreamFailed,
    /// The gateway is shutting down, or every channel is saturated. 503.
    Unavailable,
    /// The client closed its connection before its request was complete. 499 (nginx's
    /// "client closed request"): nobody receives it; logs, metrics and the usage log do.
    ClientGone,
    /// The upstream took too long. 504.
    UpstreamTimeout,
}

impl ErrorKind {
    /// The honest HTTP status.
    pub fn status(self) -> StatusCode {
        match self {
            ErrorKind::InvalidRequest => StatusCode::BAD_REQUEST,
            ErrorKind::MissingCredential | ErrorKind::InvalidCredential => StatusCode::UNAUTHORIZED,
            ErrorKind::Forbidden => StatusCode::FORBIDDEN,
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorKind::Conflict => StatusCode::CONFLICT,
            ErrorKind::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ErrorKind::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorKind::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorKind::InsufficientBalance | ErrorKind::RateLimited => {
                StatusCode::TOO_MANY_REQUESTS
            }
            ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorKind::NotImplemented => StatusCode::NOT_IMPLEMENTED,
            ErrorKind::UpstreamFailed => StatusCode::BAD_GATEWAY,
            ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorKind::UpstreamTimeout => StatusCode::GATEWAY_TIMEOUT,
            ErrorKind::ClientGone => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
        }
    }
}

/// The honest status of an error response, for the access log and `/metrics`, where the
/// family's shape shows another (t2a's HTTP 200 with `base_resp`).
#[derive(Debug, Clone, Copy)]
pub struct ErrorStatus(pub StatusCode);

/// An error on its way to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// What went wrong.
    pub kind: ErrorKind,
    /// A sentence for the user that names the field and the rule.
    pub message: String,
    /// The field (JSON path), when one is to blame.
    pub param: Option<String>,
    /// A finer machine-readable code (`model_not_found`, a validation rule's code, …).
    pub code: Option<String>,
    /// Seconds to wait before retrying, sent as `Retry-After`.
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ApiError {
        ApiError {
            kind,
            message: message.into(),
            param: None,
            code: None,
            retry_after: None,
        }
    }

    /// The refusal of a count limit — requests in flight, streams open, video tasks and
    /// uploads in flight: "Too many {what}: this {who} allows {limit} at once{hint}", a rate
    /// limit retried after `retry_after` seconds.
    pub fn too_many(what: &str, who: &str, limit: u32, hint: &str, retry_after: u64) -> ApiError {
        ApiError::new(
            ErrorKind::RateLimited,
            format!("Too many {what}: this {who} allows {limit} at once{hint}"),
        )
        .code("rate_limit_exceeded")
        .retry_after(retry_after)
    }

    /// A 400 naming `field`.
    pub fn invalid(field: impl Into<String>, code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorKind::InvalidRequest, message)
            .param(field)
            .code(code)
    }

    /// Names the field to blame.
    pub fn param(mut self, field: impl Into<String>) -> ApiError {
        self.param = Some(field.into());
        self
    }

    /// Sets the fine-grained code.
    pub fn code(mut self, code: impl Into<String>) -> ApiError {
        self.code = Some(code.into());
        self
    }

    /// Sets `Retry-After`.
    pub fn retry_after(mut self, seconds: u64) -> ApiError {
        self.retry_after = Some(seconds);
        self
    }

    /// The model is not configured for this endpoint.
    pub fn unknown_model(model: &str) -> ApiError {
        ApiError::invalid(
            "model",
            "model_not_found",
            format!("The model '{model}' does not exist or is not served by this endpoint"),
        )
    }

    /// An unexpected failure inside the gateway; the details go to the log, not the client.
    pub fn internal(context: &str, error: impl std::fmt::Display) -> ApiError {
        tracing::error!(%error, context, "internal error");
        ApiError::new(
            ErrorKind::Internal,
            format!("Internal error while {context}; the request was not charged"),
        )
    }

    /// The HTTP status `family` shows for the error (the honest one is [`ErrorKind::status`]).
    pub fn shown_status(&self, family: Family) -> StatusCode {
        let status = self.kind.status();
        match family {
            // The vendor answers an invalid key with 400 INVALID_ARGUMENT and a missing one with
            // 403 PERMISSION_DENIED (wire-formats §6.4); its SDK relies on that.
            Family::Google => StatusCode::from_u16(google_status(self.kind).0).unwrap_or(status),
            // The vendor answers its own errors with HTTP 200 and a non-zero
            // `base_resp.status_code` (wire-formats §3.2), and its clients read that, not the
            // status; HTTP's own refusals (method, body timeout, size, type) keep theirs.
            Family::T2a
                if !matches!(
                    self.kind,
                    ErrorKind::MethodNotAllowed
                        | ErrorKind::RequestTimeout
                        | ErrorKind::PayloadTooLarge
                        | ErrorKind::UnsupportedMediaType
                ) =>
            {
                StatusCode::OK
            }
            _ => status,
        }
    }

    /// The error body in `family`'s shape (also what a stream sends as its error event).
    pub fn body(&self, family: Family) -> serde_json::Value {
        let body = match family {
            Family::OpenAi => serde_json::to_value(OpenAiError {
                error: OpenAiErrorDetail {
                    message: self.message.clone(),
                    kind: openai_type(self.kind),
                    param: self.param.clone(),
                    code: self
                        .code
                        .clone()
                        .or_else(|| openai_code(self.kind).map(str::to_owned)),
                },
            }),
            Family::T2a => serde_json::to_value(T2aError {
                base_resp: T2aErrorStatus {
                    status_code: t2a_code(self.kind),
                    status_msg: self.message.clone(),
                },
            }),
            Family::Ark => {
                let (kind, code) = ark_type_and_code(self);
                serde_json::to_value(ArkError {
                    error: ArkErrorDetail {
                        code,
                        message: self.message.clone(),
                        param: self.param.clone().unwrap_or_default(),
                        kind: kind.to_owned(),
                    },
                })
            }
            Family::Google => {
                let (code, status) = google_status(self.kind);
                let details = if self.kind == ErrorKind::InvalidCredential {
                    vec![GoogleErrorInfo::api_key_invalid()]
                } else {
                    Vec::new()
                };
                serde_json::to_value(GoogleError {
                    error: GoogleErrorDetail {
                        code,
                        message: self.message.clone(),
                        status: status.to_owned(),
                        details,
                    },
                })
            }
        };
        body.unwrap_or(serde_json::Value::Null)
    }
}

/// The OpenAI family's error body (also the admin API's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OpenAiError {
    /// What went wrong.
    pub error: OpenAiErrorDetail,
}

/// What went wrong, in OpenAI's words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OpenAiErrorDetail {
    /// For a person.
    pub message: String,
    /// The kind (`invalid_request_error`, `insufficient_quota`, …).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The field at fault.
    pub param: Option<String>,
    /// The rule or condition (`invalid_value`, `model_not_found`, …).
    pub code: Option<String>,
}

/// The t2a family's error body: `base_resp.status_code` is not 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct T2aError {
    /// The status.
    pub base_resp: T2aErrorStatus,
}

/// A t2a status: its code (wire-formats §3.2) and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct T2aErrorStatus {
    /// Not 0.
    pub status_code: i64,
    /// For a person.
    pub status_msg: String,
}

/// The clip-task family's error body: string codes such as `InvalidParameter.duration`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ArkError {
    /// What went wrong.
    pub error: ArkErrorDetail,
}

/// What went wrong, in Ark's words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ArkErrorDetail {
    /// The code (`InvalidParameter.duration`, `AuthenticationError`, …).
    pub code: String,
    /// For a person.
    pub message: String,
    /// The field at fault; empty when none is.
    pub param: String,
    /// The kind.
    #[serde(rename = "type")]
    pub kind: String,
}

/// The native family's error body (an RPC status).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GoogleError {
    /// The status.
    pub error: GoogleErrorDetail,
}

/// An RPC status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GoogleErrorDetail {
    /// The HTTP status it stands for.
    pub code: u16,
    /// For a person.
    pub message: String,
    /// The RPC code's name (`INVALID_ARGUMENT`, `PERMISSION_DENIED`, …).
    pub status: String,
    /// Why, for a machine (an invalid key's `API_KEY_INVALID`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<GoogleErrorInfo>,
}

/// `google.rpc.ErrorInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GoogleErrorInfo {
    /// `type.googleapis.com/google.rpc.ErrorInfo`.
    #[serde(rename = "@type")]
    pub type_url: &'static str,
    /// The reason (`API_KEY_INVALID`).
    pub reason: &'static str,
    /// `googleapis.com`.
    pub domain: &'static str,
}

impl GoogleErrorInfo {
    /// What the vendor says of an invalid key (wire-formats §6.4), which its SDK reads.
    fn api_key_invalid() -> GoogleErrorInfo {
        GoogleErrorInfo {
            type_url: "type.googleapis.com/google.rpc.ErrorInfo",
            reason: "API_KEY_INVALID",
            domain: "googleapis.com",
        }
    }
}

/// A format crate's field-level validation error (`tollgate_field_error`, which every protocol
/// crate shares) is a 400 naming the field, with the rule's code.
impl<R: tollgate_field_error::Rule> From<tollgate_field_error::FieldError<R>> for ApiError {
    fn from(e: tollgate_field_error::FieldError<R>) -> ApiError {
        ApiError::invalid(e.field, e.rule.code(), e.message)
    }
}

fn openai_type(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InsufficientBalance => "insufficient_quota",
        ErrorKind::RateLimited => "requests",
        ErrorKind::Internal
        | ErrorKind::UpstreamFailed
        | ErrorKind::Unavailable
        | ErrorKind::UpstreamTimeout
        | ErrorKind::NotImplemented => "server_error",
        _ => "invalid_request_error",
    }
}

fn openai_code(kind: ErrorKind) -> Option<&'static str> {
    match kind {
        ErrorKind::MissingCredential => Some("missing_api_key"),
        ErrorKind::InvalidCredential => Some("invalid_api_key"),
        ErrorKind::Forbidden => Some("key_disabled"),
        ErrorKind::InsufficientBalance => Some("insufficient_quota"),
        ErrorKind::RateLimited => Some("rate_limit_exceeded"),
        ErrorKind::PayloadTooLarge => Some("request_too_large"),
        ErrorKind::UnsupportedMediaType => Some("unsupported_media_type"),
        ErrorKind::RequestTimeout => Some("request_timeout"),
        ErrorKind::ClientGone => Some("client_closed_request"),
        ErrorKind::NotImplemented => Some("not_implemented"),
        ErrorKind::UpstreamTimeout => Some("upstream_timeout"),
        ErrorKind::UpstreamFailed => Some("upstream_error"),
        ErrorKind::Conflict => Some("conflict"),
        _ => None,
    }
}

/// `base_resp.status_code` values of wire-formats §3.4.
fn t2a_code(kind: ErrorKind) -> i64 {
    match kind {
        ErrorKind::MissingCredential | ErrorKind::InvalidCredential | ErrorKind::Forbidden => 1004,
        ErrorKind::InsufficientBalance => 1008,
        ErrorKind::RateLimited => 1002,
        ErrorKind::UpstreamTimeout | ErrorKind::RequestTimeout | ErrorKind::ClientGone => 1001,
        ErrorKind::InvalidRequest
        | ErrorKind::NotFound
        | ErrorKind::MethodNotAllowed
        | ErrorKind::Conflict
        | ErrorKind::PayloadTooLarge
        | ErrorKind::UnsupportedMediaType => 2013,
        ErrorKind::Internal
        | ErrorKind::NotImplemented
        | ErrorKind::UpstreamFailed
        | ErrorKind::Unavailable => 1000,
    }
}

/// Ark's `type` and `code` (wire-formats §5.4).
fn ark_type_and_code(e: &ApiError) -> (&'static str, String) {
    let with_param = |code: &str| match &e.param {
        Some(p) => format!("{code}.{p}"),
        None => code.to_owned(),
    };
    match e.kind {
        ErrorKind::InvalidRequest if e.code.as_deref() == Some("required") => {
            ("BadRequest", "MissingParameter".into())
        }
        ErrorKind::InvalidRequest
        | ErrorKind::PayloadTooLarge
        | ErrorKind::UnsupportedMediaType => ("BadRequest", with_param("InvalidParameter")),
        ErrorKind::MissingCredential | ErrorKind::InvalidCredential => {
            ("Unauthorized", "AuthenticationError".into())
        }
        ErrorKind::Forbidden => ("Forbidden", "AccessDenied".into()),
        ErrorKind::InsufficientBalance => ("TooManyRequests", "QuotaExceeded".into()),
        ErrorKind::NotFound => ("NotFound", with_param("NotFound")),
        ErrorKind::MethodNotAllowed => ("BadRequest", "InvalidEndpoint.MethodNotAllowed".into()),
        ErrorKind::Conflict => ("Conflict", with_param("Conflict")),
        ErrorKind::RequestTimeout => ("RequestTimeout", "RequestTimeout".into()),
        ErrorKind::ClientGone => ("BadRequest", "ClientClosedRequest".into()),
        ErrorKind::RateLimited => ("TooManyRequests", "RateLimitExceeded".into()),
        ErrorKind::NotImplemented => ("NotImplemented", "NotImplemented".into()),
        ErrorKind::Internal => ("InternalServerError", "InternalServiceError".into()),
        ErrorKind::UpstreamFailed => ("BadGateway", "UpstreamError".into()),
        ErrorKind::Unavailable => ("ServiceUnavailable", "ServerOverloaded".into()),
        ErrorKind::UpstreamTimeout => ("GatewayTimeout", "UpstreamTimeout".into()),
    }
}

/// Google RPC code and status (wire-formats §6.4).
fn google_status(kind: ErrorKind) -> (u16, &'static str) {
    match kind {
        ErrorKind::InvalidRequest | ErrorKind::InvalidCredential => (400, "INVALID_ARGUMENT"),
        ErrorKind::MissingCredential | ErrorKind::Forbidden => (403, "PERMISSION_DENIED"),
        ErrorKind::NotFound => (404, "NOT_FOUND"),
        ErrorKind::MethodNotAllowed => (405, "UNIMPLEMENTED"),
        ErrorKind::Conflict => (409, "ALREADY_EXISTS"),
        ErrorKind::RequestTimeout => (408, "DEADLINE_EXCEEDED"),
        ErrorKind::ClientGone => (499, "CANCELLED"),
        ErrorKind::PayloadTooLarge => (413, "INVALID_ARGUMENT"),
        ErrorKind::UnsupportedMediaType => (415, "INVALID_ARGUMENT"),
        ErrorKind::InsufficientBalance | ErrorKind::RateLimited => (429, "RESOURCE_EXHAUSTED"),
        ErrorKind::Internal => (500, "INTERNAL"),
        ErrorKind::NotImplemented => (501, "UNIMPLEMENTED"),
        ErrorKind::UpstreamFailed => (502, "UNAVAILABLE"),
        ErrorKind::Unavailable => (503, "UNAVAILABLE"),
        ErrorKind::UpstreamTimeout => (504, "DEADLINE_EXCEEDED"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn render(e: ApiError, f: Family) -> (u16, serde_json::Value) {
        let r = e.into_response(f);
        let status = r.status().as_u16();
        let bytes = r.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn each_family_has_its_own_shape() {
        let e = ApiError::invalid("input", "empty", "'input' must not be empty");
        let (s, b) = render(e.clone(), Family::OpenAi).await;
        assert_eq!(s, 400);
        assert_eq!(b["error"]["param"], "input");
        assert_eq!(b["error"]["type"], "invalid_request_error");
        assert_eq!(b["error"]["code"], "empty");
        let (s, b) = render(e.clone(), Family::T2a).await;
        assert_eq!(s, 200, "the vendor's errors are HTTP 200 with base_resp");
        assert_eq!(b["base_resp"]["status_code"], 2013);
        let (_, b) = render(e.clone(), Family::Ark).await;
        assert_eq!(b["error"]["code"], "InvalidParameter.input");
        assert_eq!(b["error"]["type"], "BadRequest");
        let (s, b) = render(e, Family::Google).await;
        assert_eq!(s, 400);
        assert_eq!(b["error"]["status"], "INVALID_ARGUMENT");
        assert_eq!(b["error"]["code"], 400);
    }

    #[tokio::test]
    async fn balance_errors_are_insufficient_quota() {
        let e = ApiError::new(ErrorKind::InsufficientBalance, "no money");
        let (s, b) = render(e.clone(), Family::OpenAi).await;
        assert_eq!(s, 429);
        assert_eq!(b["error"]["type"], "insufficient_quota");
        assert_eq!(b["error"]["code"], "insufficient_quota");
        assert_eq!(
            render(e, Family::T2a).await.1["base_resp"]["status_code"],
            1008
        );
    }
}
