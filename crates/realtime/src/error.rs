//! The `error` event the gateway writes itself, in the Realtime API's shape: an event the
//! client refused for (its rule as the `code`, its field as the `param`, its `event_id` echoed),
//! or why the session ends (the balance, the key's budget, a limit).

use serde::Serialize;

/// Which side of the exchange is at fault, as the API's `error.type` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    /// The client's event broke a rule (`invalid_request_error`).
    InvalidRequest,
    /// The caller cannot go on: no balance, no budget (`insufficient_quota`).
    InsufficientQuota,
    /// A limit of the key or the session (`rate_limit_exceeded`).
    RateLimit,
    /// The gateway or the vendor failed (`server_error`).
    Server,
}

impl ErrorType {
    const fn as_str(self) -> &'static str {
        match self {
            ErrorType::InvalidRequest => "invalid_request_error",
            ErrorType::InsufficientQuota => "insufficient_quota",
            ErrorType::RateLimit => "rate_limit_exceeded",
            ErrorType::Server => "server_error",
        }
    }
}

#[derive(Serialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    event_id: &'a str,
    error: Body<'a>,
}

#[derive(Serialize)]
struct Body<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    code: &'a str,
    message: &'a str,
    param: Option<&'a str>,
    event_id: Option<&'a str>,
}

/// One `error` event: `event_id` is the gateway's own id for it; `about` the client event it
/// answers, if any.
///
/// ```
/// use tollgate_realtime::error::{error_event, ErrorType};
///
/// let event = error_event("evt_tg_1", ErrorType::InvalidRequest, "unknown_event", "'x' is not a client event", Some("type"), Some("e7"));
/// assert_eq!(event, r#"{"type":"error","event_id":"evt_tg_1","error":{"type":"invalid_request_error","code":"unknown_event","message":"'x' is not a client event","param":"type","event_id":"e7"}}"#);
/// ```
pub fn error_event(
    event_id: &str,
    kind: ErrorType,
    code: &str,
    message: &str,
    param: Option<&str>,
    about: Option<&str>,
) -> String {
    let event = Event {
        kind: "error",
        event_id,
        error: Body {
            kind: kind.as_str(),
            code,
            message,
            param: param.filter(|p| !p.is_empty()),
            event_id: about,
        },
    };
    // A struct of strings always serializes; the fallback keeps the signature total.
    serde_json::to_string(&event).unwrap_or_else(|_| {
        r#"{"type":"error","error":{"type":"server_error","message":"error"}}"#.to_owned()
    })
}
