//! The `genai` channel format: the vendor's native text generation (wire-formats §6),
//! `POST {base}/v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse` and
//! `:countTokens`, with the key in `x-goog-api-key`.
//!
//! Bodies pass as bytes: the gateway forwards what the client sent (after validating it), so no
//! field this crate does not know is lost on the way (a `thoughtSignature` above all), and relays
//! each streamed event's JSON as the vendor wrote it.
//!
//! What the vendor does that an adapter must not miss:
//! * streamed events are CRLF-framed, without `event:` lines and without a `[DONE]`: the stream
//!   just ends;
//! * an error can arrive as an event mid-stream (`{"error":{…}}`) — it ends the stream with that
//!   error; error bodies may be wrapped in a JSON array;
//! * an invalid key is HTTP 400 `INVALID_ARGUMENT`, not 401.

use crate::common::client::{HttpClient, full_body, is_event_stream, sse_events};
use crate::common::{Answer, describe_google_error, google_error_message, retry_after};
use crate::common::{Frame, FrameStream};
use crate::seams::genai::TextGenerator;
use crate::{Endpoint, UpstreamError};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use http::{Method, Request, header};
use std::time::Instant;

/// Bounds on a streamed answer (docs/decisions.md, "Upstream answers bounded"): a text-generation
/// chunk is a few KB, but an image model sends each image whole in one event — a 4K PNG, in
/// base64, can pass 30 MB (docs/decisions.md, "Images").
const STREAM_LIMITS: tollgate_sse::Limits = tollgate_sse::Limits {
    max_event_bytes: 48 << 20,
    max_total_bytes: 96 << 20,
};

/// The largest non-streamed answer read: a few 4K images.
const MAX_RESPONSE: usize = 96 << 20;

/// The `genai` format behind the text-generation seam.
#[derive(Debug, Clone, Copy, Default)]
pub struct Genai;

impl TextGenerator for Genai {
    fn generate<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        model: &'a str,
        body: Bytes,
    ) -> BoxFuture<'a, Result<Answer<Bytes>, UpstreamError>> {
        generate(client, endpoint, model, body).boxed()
    }

    fn stream<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        model: &'a str,
        body: Bytes,
    ) -> BoxFuture<'a, Result<FrameStream, UpstreamError>> {
        stream(client, endpoint, model, body).boxed()
    }

    fn count_tokens<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        model: &'a str,
        body: Bytes,
    ) -> BoxFuture<'a, Result<Answer<Bytes>, UpstreamError>> {
        count_tokens(client, endpoint, model, body).boxed()
    }

    fn predict<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        model: &'a str,
        body: Bytes,
    ) -> BoxFuture<'a, Result<Answer<Bytes>, UpstreamError>> {
        predict(client, endpoint, model, body).boxed()
    }
}

/// `:generateContent`: the vendor's JSON answer, as bytes.
pub async fn generate(
    client: &HttpClient,
    endpoint: &Endpoint,
    model: &str,
    body: Bytes,
) -> Result<Answer<Bytes>, UpstreamError> {
    whole(client, endpoint, model, "generateContent", body).await
}

/// `:predict`: the vendor's JSON answer, as bytes (up to four 2K images, inline).
pub async fn predict(
    client: &HttpClient,
    endpoint: &Endpoint,
    model: &str,
    body: Bytes,
) -> Result<Answer<Bytes>, UpstreamError> {
    whole(client, endpoint, model, "predict", body).await
}

/// The whole JSON answer of the model's `action`, up to [`MAX_RESPONSE`].
async fn whole(
    client: &HttpClient,
    endpoint: &Endpoint,
    model: &str,
    action: &str,
    body: Bytes,
) -> Result<Answer<Bytes>, UpstreamError> {
    let started = Instant::now();
    let path = format!("/v1beta/models/{}:{action}", model_segment(model)?);
    let response = send(client, endpoint, &path, body).await?;
    let bytes =
        HttpClient::read_body(response.into_body(), MAX_RESPONSE, &endpoint.timeouts).await?;
    refused_in_body(&bytes)?;
    Ok(Answer {
        body: bytes,
        upstream_time: started.elapsed(),
    })
}

/// `:countTokens`: the vendor's JSON answer, as bytes.
pub async fn count_tokens(
    client: &HttpClient,
    endpoint: &Endpoint,
    model: &str,
    body: Bytes,
) -> Result<Answer<Bytes>, UpstreamError> {
    let started = Instant::now();
    let path = format!("/v1beta/models/{}:countTokens", model_segment(model)?);
    let response = send(client, endpoint, &path, body).await?;
    let bytes = HttpClient::read_body(response.into_body(), 1 << 20, &endpoint.timeouts).await?;
    refused_in_body(&bytes)?;
    Ok(Answer {
        body: bytes,
        upstream_time: started.elapsed(),
    })
}

/// `:streamGenerateContent?alt=sse`. Returns once the response head has arrived; events then
/// come as the vendor sends them.
pub async fn stream(
    client: &HttpClient,
    endpoint: &Endpoint,
    model: &str,
    body: Bytes,
) -> Result<FrameStream, UpstreamError> {
    let path = format!(
        "/v1beta/models/{}:streamGenerateContent?alt=sse",
        model_segment(model)?
    );
    let response = send(client, endpoint, &path, body).await?;
    if !is_event_stream(&response) {
        let bytes =
            HttpClient::read_body(response.into_body(), 1 << 20, &endpoint.timeouts).await?;
        refused_in_body(&bytes)?;
        return Err(UpstreamError::Protocol(
            "streamGenerateContent answered without text/event-stream".into(),
        ));
    }
    let events = sse_events(response.into_body(), endpoint.timeouts.idle, STREAM_LIMITS);
    let frames = events.filter_map(|event| async move {
        match event {
            Err(e) => Some(Err(e)),
            Ok(event) if event.data.trim().is_empty() || event.is_done() => None,
            Ok(event) => Some(match vendor_error(event.data.as_bytes()) {
                Some(e) => Err(e),
                None => Ok(Frame { data: event.data }),
            }),
        }
    });
    Ok(Box::pin(crate::common::client::until_first_error(frames)))
}

async fn send(
    client: &HttpClient,
    endpoint: &Endpoint,
    path: &str,
    body: Bytes,
) -> Result<http::Response<hyper::body::Incoming>, UpstreamError> {
    let mut builder = crate::common::client::traced(Request::builder(), endpoint)
        .method(Method::POST)
        .uri(endpoint.url(path))
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(key) = &endpoint.api_key {
        builder = builder.header("x-goog-api-key", key.as_str());
    }
    let request = builder
        .body(full_body(body))
        .map_err(|e| UpstreamError::Config(e.to_string()))?;
    let response = client.send(request, &endpoint.timeouts).await?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let bytes = HttpClient::read_body(response.into_body(), 1 << 20, &endpoint.timeouts)
        .await
        .unwrap_or_default();
    Err(UpstreamError::refused(
        status.as_u16(),
        &bytes,
        google_error_message,
        retry_after,
    ))
}

/// An answer with HTTP 200 whose body is an error anyway.
fn refused_in_body(bytes: &[u8]) -> Result<(), UpstreamError> {
    match vendor_error(bytes) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `{"error":{code,message,status}}`, or the same wrapped in an array, as an error.
fn vendor_error(bytes: &[u8]) -> Option<UpstreamError> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let error = match &value {
        serde_json::Value::Array(items) => items.first()?.get("error")?,
        other => other.get("error")?,
    };
    let status = error
        .get("code")
        .and_then(serde_json::Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(502);
    Some(UpstreamError::Status {
        status,
        message: Some(describe_google_error(error)),
        detail: crate::common::error::excerpt(bytes),
        retry_after: None,
    })
}

/// A model id placed in a path must not be able to change the path.
fn model_segment(model: &str) -> Result<&str, UpstreamError> {
    if model.is_empty()
        || !model
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        return Err(UpstreamError::Config(format!(
            "unusable model id {model:?}"
        )));
    }
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_read_plain_or_wrapped_in_an_array() {
        let plain = br#"{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}"#;
        let wrapped =
            br#"[{"error":{"code":400,"message":"bad key","status":"INVALID_ARGUMENT"}}]"#;
        assert!(matches!(
            vendor_error(plain),
            Some(UpstreamError::Status { status: 429, .. })
        ));
        assert!(matches!(
            vendor_error(wrapped),
            Some(UpstreamError::Status { status: 400, .. })
        ));
        assert_eq!(
            google_error_message(wrapped).as_deref(),
            Some("INVALID_ARGUMENT: bad key")
        );
        assert_eq!(google_error_message(b"<html>502 Bad Gateway</html>"), None);
        assert!(vendor_error(br#"{"candidates":[]}"#).is_none());
    }

    #[test]
    fn model_ids_cannot_escape_the_path() {
        assert!(model_segment("gen-2.5-flash").is_ok());
        assert!(model_segment("../x").is_err());
        assert!(model_segment("a:b").is_err());
    }
}
