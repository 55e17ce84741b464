//! The `t2a` channel format: MiniMax-style speech synthesis, `POST {base}/v1/t2a_v2` with
//! `Authorization: Bearer` (wire-formats §3).
//!
//! What the vendor does that an adapter must not miss:
//! * errors usually arrive as HTTP 200 with a non-zero `base_resp.status_code` — always checked;
//! * audio is hex; an odd length or a non-hex character is an upstream fault, not silence;
//! * streamed frames come separated by LF or CRLF blank lines, may end with `data: [DONE]`, and an
//!   error can arrive as a frame mid-stream — it ends the stream with that error.

use crate::client::{HttpClient, full_body, sse_events};
use crate::embeddings::{Answer, retry_after};
use crate::{Endpoint, UpstreamError};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http::{Method, Request, header};
use std::pin::Pin;
use std::time::Instant;
use tollgate_vendor_audio::base_resp::http_status;
use tollgate_vendor_audio::{BaseResp, T2aRequest, T2aResponse};

/// Bounds on a streamed answer (docs/decisions.md, "Upstream answers bounded"): a t2a stream's last frame repeats the whole audio in hex: a 10,000-character text as 128 kbit/s MP3 is about 21 MB of hex.
const STREAM_LIMITS: tollgate_sse::Limits = tollgate_sse::Limits {
    max_event_bytes: 64 << 20,
    max_total_bytes: 256 << 20,
};

/// The largest non-streamed answer read: 10,000 characters of 256 kbps MP3 is about 22 MB, twice
/// that as hex.
const MAX_RESPONSE: usize = 128 << 20;

/// One decoded frame of a streamed synthesis.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The frame's audio, hex-decoded (may be empty).
    pub audio: Bytes,
    /// The frame as the vendor sent it (its `data.audio` still hex), for faithful relaying.
    pub raw: T2aResponse,
}

impl Frame {
    /// The last frame: `data.status = 2`.
    pub fn is_final(&self) -> bool {
        self.raw.is_final()
    }
}

/// Frames as they arrive; an `Err` is the last item.
pub type FrameStream = Pin<Box<dyn Stream<Item = Result<Frame, UpstreamError>> + Send>>;

/// A non-streamed synthesis: `request.stream` must be false.
pub async fn synthesize(
    client: &HttpClient,
    endpoint: &Endpoint,
    request: &T2aRequest,
) -> Result<Answer<(Bytes, T2aResponse)>, UpstreamError> {
    let started = Instant::now();
    let response = send(client, endpoint, request).await?;
    let bytes =
        HttpClient::read_body(response.into_body(), MAX_RESPONSE, &endpoint.timeouts).await?;
    let body: T2aResponse = serde_json::from_slice(&bytes)
        .map_err(|e| UpstreamError::Protocol(format!("t2a response: {e}")))?;
    refused(&body.base_resp)?;
    let audio = match &body.data {
        Some(data) => data
            .audio_bytes()
            .map_err(|e| UpstreamError::Protocol(format!("t2a audio: {e}")))?,
        None => return Err(UpstreamError::Protocol("t2a response without data".into())),
    };
    Ok(Answer {
        body: (Bytes::from(audio), body),
        upstream_time: started.elapsed(),
    })
}

/// A streamed synthesis: `request.stream` must be true. Returns once the response head has
/// arrived; frames then come as the vendor sends them.
pub async fn stream(
    client: &HttpClient,
    endpoint: &Endpoint,
    request: &T2aRequest,
) -> Result<FrameStream, UpstreamError> {
    let response = send(client, endpoint, request).await?;
    let is_sse = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse {
        // A refusal of a stream request comes as one JSON body, often with HTTP 200.
        let bytes =
            HttpClient::read_body(response.into_body(), 1 << 20, &endpoint.timeouts).await?;
        return Err(match serde_json::from_slice::<T2aResponse>(&bytes) {
            Ok(body) => refused(&body.base_resp).err().unwrap_or_else(|| {
                UpstreamError::Protocol("t2a stream answered with JSON, not SSE".into())
            }),
            Err(e) => UpstreamError::Protocol(format!("t2a stream: {e}")),
        });
    }
    let events = sse_events(response.into_body(), endpoint.timeouts.idle, STREAM_LIMITS);
    let frames = events.filter_map(|event| async move {
        match event {
            Err(e) => Some(Err(e)),
            Ok(event) if event.data.trim().is_empty() || event.is_done() => None,
            Ok(event) => Some(parse_frame(&event.data)),
        }
    });
    Ok(Box::pin(crate::client::until_first_error(frames)))
}

fn parse_frame(data: &str) -> Result<Frame, UpstreamError> {
    let raw: T2aResponse = serde_json::from_str(data)
        .map_err(|e| UpstreamError::Protocol(format!("t2a frame: {e}")))?;
    refused(&raw.base_resp)?;
    let audio = match &raw.data {
        Some(d) => d
            .audio_bytes()
            .map_err(|e| UpstreamError::Protocol(format!("t2a frame audio: {e}")))?,
        None => Vec::new(),
    };
    Ok(Frame {
        audio: Bytes::from(audio),
        raw,
    })
}

async fn send(
    client: &HttpClient,
    endpoint: &Endpoint,
    request: &T2aRequest,
) -> Result<http::Response<hyper::body::Incoming>, UpstreamError> {
    let body = serde_json::to_vec(request).map_err(|e| UpstreamError::Protocol(e.to_string()))?;
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri(endpoint.url("/v1/t2a_v2"))
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(key) = &endpoint.api_key {
        builder = builder.header(header::AUTHORIZATION, format!("Bearer {key}"));
    }
    let http_request = builder
        .body(full_body(body))
        .map_err(|e| UpstreamError::Config(e.to_string()))?;
    let response = client.send(http_request, &endpoint.timeouts).await?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let bytes = HttpClient::read_body(response.into_body(), 1 << 20, &endpoint.timeouts)
        .await
        .unwrap_or_default();
    let message = match serde_json::from_slice::<T2aResponse>(&bytes) {
        Ok(body) if !body.base_resp.is_success() => format!(
            "code {}: {}",
            body.base_resp.status_code, body.base_resp.status_msg
        ),
        _ => crate::embeddings::openai_error_message(&bytes),
    };
    Err(UpstreamError::Status {
        status: status.as_u16(),
        message,
        retry_after,
    })
}

/// A non-zero `base_resp` as an error with the status the vendor's code means.
fn refused(base: &BaseResp) -> Result<(), UpstreamError> {
    if base.is_success() {
        return Ok(());
    }
    Err(UpstreamError::Status {
        status: http_status(base.status_code),
        message: format!("code {}: {}", base.status_code, base.status_msg),
        retry_after: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_decode_hex_and_errors_carry_the_vendor_code() {
        let f = parse_frame(
            r#"{"data":{"audio":"fffb","status":1},"base_resp":{"status_code":0,"status_msg":""}}"#,
        )
        .unwrap();
        assert_eq!(&f.audio[..], &[0xff, 0xfb]);
        assert!(!f.is_final());
        let e = parse_frame(r#"{"data":{"audio":"fff","status":1},"base_resp":{"status_code":0}}"#)
            .unwrap_err();
        assert!(matches!(e, UpstreamError::Protocol(_)));
        let e = parse_frame(r#"{"base_resp":{"status_code":1002,"status_msg":"rate limit"}}"#)
            .unwrap_err();
        assert!(
            matches!(e, UpstreamError::Status { status: 429, .. }),
            "{e:?}"
        );
    }
}
