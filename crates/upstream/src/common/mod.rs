//! What every adapter shares: the HTTP [`client`] with its timeouts, the [`error`] an upstream
//! call ends in, [`multipart`] uploads, name resolution with the SSRF guard ([`resolve`]), a
//! finished call ([`Answer`]), `Retry-After`, a refusal in OpenAI's error shape — the shape most
//! vendors copy — and the task formats' JSON call. The seams and the adapters import this; it
//! imports neither.

pub mod client;
pub mod error;
pub mod multipart;
pub mod resolve;
pub mod websocket;

use self::client::{HttpClient, bearer_request, full_body};
use crate::{Endpoint, UpstreamError};
use bytes::Bytes;
use http::{Method, header};
use serde::de::DeserializeOwned;
use std::time::Duration;
use std::time::Instant;

/// A finished call: the response and how long the upstream took.
#[derive(Debug)]
pub struct Answer<T> {
    /// The decoded response.
    pub body: T,
    /// From sending the request to the end of the response body.
    pub upstream_time: Duration,
}

impl<T> Answer<T> {
    /// The same call with its response turned into another type.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Answer<U> {
        Answer {
            body: f(self.body),
            upstream_time: self.upstream_time,
        }
    }
}

/// One streamed event: its JSON text, exactly as the vendor sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The event's `data`: a slice of the bytes read, not a copy (docs/benchmarks.md, "Lean
    /// streams").
    pub data: tollgate_sse::ByteString,
}

/// Events as they arrive; an `Err` is the last item.
pub type FrameStream =
    std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<Frame, UpstreamError>> + Send>>;

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

/// The vendor's `status: message` of an error body (or the same wrapped in an array); `None`
/// when the body is not one.
pub(crate) fn google_error_message(bytes: &[u8]) -> Option<String> {
    let parsed: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let error = match &parsed {
        serde_json::Value::Array(items) => items.first()?.get("error")?,
        other => other.get("error")?,
    };
    error.is_object().then(|| describe_google_error(error))
}

/// `status: message` of a Google error object.
pub(crate) fn describe_google_error(error: &serde_json::Value) -> String {
    let text = |name: &str| error.get(name).and_then(|v| v.as_str()).unwrap_or_default();
    format!("{}: {}", text("status"), text("message"))
}

/// The largest task answer read.
const MAX_TASK_RESPONSE: usize = 4 << 20;

/// A Bearer JSON call (the task formats'): `body` as JSON, the answer decoded as `T` (an empty
/// answer as `null`), a refusal's message read by `error_message`.
pub(crate) async fn call_json<T: DeserializeOwned>(
    client: &HttpClient,
    endpoint: &Endpoint,
    method: Method,
    path: &str,
    body: Option<Vec<u8>>,
    error_message: fn(&[u8]) -> Option<String>,
) -> Result<Answer<T>, UpstreamError> {
    let mut builder =
        bearer_request(endpoint, method, path).header(header::ACCEPT, "application/json");
    if body.is_some() {
        builder = builder.header(header::CONTENT_TYPE, "application/json");
    }
    let request = builder
        .body(full_body(body.map(Bytes::from).unwrap_or_default()))
        .map_err(|e| UpstreamError::Config(e.to_string()))?;
    let started = Instant::now();
    let response = client.send(request, &endpoint.timeouts).await?;
    let status = response.status();
    let retry_after = retry_after(response.headers());
    let bytes =
        HttpClient::read_body(response.into_body(), MAX_TASK_RESPONSE, &endpoint.timeouts).await?;
    if !status.is_success() {
        return Err(UpstreamError::refused(
            status.as_u16(),
            &bytes,
            error_message,
            retry_after,
        ));
    }
    // DELETE answers may be empty.
    let bytes = if bytes.is_empty() {
        Bytes::from_static(b"null")
    } else {
        bytes
    };
    let body = serde_json::from_slice(&bytes)
        .map_err(|e| UpstreamError::Protocol(format!("{path}: {e}")))?;
    Ok(Answer {
        body,
        upstream_time: started.elapsed(),
    })
}

/// An upstream id placed in a path must not be able to change the path.
pub(crate) fn path_segment(id: &str) -> Result<&str, UpstreamError> {
    if id.is_empty()
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        return Err(UpstreamError::Protocol(format!(
            "unusable upstream task id {id:?}"
        )));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_cannot_escape_the_path() {
        assert!(path_segment("cgt-20260101-abc").is_ok());
        assert!(path_segment("../admin").is_err());
        assert!(path_segment("a/b").is_err());
        assert!(path_segment("").is_err());
    }

    #[test]
    fn error_messages_come_from_the_openai_envelope() {
        let body =
            br#"{"error":{"message":"bad things","type":"server_error","param":null,"code":null}}"#;
        assert_eq!(openai_error_message(body).as_deref(), Some("bad things"));
        assert_eq!(openai_error_message(b"<html>oops"), None);
    }
}
