//! What every adapter shares: a finished call ([`Answer`]), `Retry-After`, and a refusal in
//! OpenAI's error shape — the shape most vendors copy. The seams and the adapters import this;
//! it imports neither.

use crate::client::HttpClient;
use crate::{Endpoint, UpstreamError};
use http::header;
use std::time::Duration;

/// A finished call: the response and how long the upstream took.
#[derive(Debug)]
pub struct Answer<T> {
    /// The decoded response.
    pub body: T,
    /// From sending the request to the end of the response body.
    pub upstream_time: Duration,
}

/// `Retry-After` as whole seconds, when it is given that way.
pub(crate) fn retry_after(headers: &http::HeaderMap) -> Option<u64> {
    headers
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

/// An OpenAI-style refusal: the status, the `error.message` of the body, and `Retry-After`.
pub(crate) async fn openai_refusal(
    response: http::Response<hyper::body::Incoming>,
    endpoint: &Endpoint,
) -> UpstreamError {
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    let bytes = HttpClient::read_body(response.into_body(), 1 << 20, &endpoint.timeouts)
        .await
        .unwrap_or_default();
    UpstreamError::refused(status, &bytes, openai_error_message, retry_after)
}

/// The message of an OpenAI-shaped error body (`{"error": {"message": …}}`); `None` when the
/// body is not one.
pub(crate) fn openai_error_message(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        error: Inner,
    }
    #[derive(serde::Deserialize)]
    struct Inner {
        message: String,
    }
    serde_json::from_slice::<Envelope>(body)
        .ok()
        .map(|e| e.error.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_come_from_the_openai_envelope() {
        let body =
            br#"{"error":{"message":"bad things","type":"server_error","param":null,"code":null}}"#;
        assert_eq!(openai_error_message(body).as_deref(), Some("bad things"));
        assert_eq!(openai_error_message(b"<html>oops"), None);
    }
}
