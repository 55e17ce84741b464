//! Response bodies and the plain responses built from them, and an error rendered as a response
//! in its route's shape ([`ApiError::into_response`]; what an error *is* is `errors`, below).

use crate::errors::{ApiError, ErrorKind, ErrorStatus, Shape};
use bytes::Bytes;
use http::HeaderValue;
use http::{Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use serde_json::json;

/// Every response body: buffered or streamed bytes.
pub type ResponseBody = BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// What feeds a [`channel_body`]: each `Ok` a chunk of the body, an `Err` its end cut short.
pub type BodySender = tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>;

/// A body written a chunk at a time by another task (an export read a page at a time, never
/// built whole): the sender, and the body it feeds. At most four chunks wait, so a slow
/// receiver slows the writer instead of filling memory; a send that fails means the client
/// left, and the writer stops. An `Err` cuts the body short (its head is sent already).
pub fn channel_body() -> (BodySender, ResponseBody) {
    let (sender, receiver) = tokio::sync::mpsc::channel(4);
    (sender, ChannelBody(receiver).boxed())
}

struct ChannelBody(tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        self.0.poll_recv(cx).map(|chunk| {
            chunk.map(|chunk| {
                chunk
                    .map(http_body::Frame::data)
                    .map_err(|e| Box::new(e) as Self::Error)
            })
        })
    }
}

/// A buffered response body.
pub fn full(bytes: impl Into<Bytes>) -> ResponseBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

/// A JSON response.
pub fn json_response<T: serde::Serialize + ?Sized>(
    status: StatusCode,
    value: &T,
) -> Response<ResponseBody> {
    // Serializing our own response types cannot fail; an empty body would be the symptom.
    json_bytes_response(status, serde_json::to_vec(value).unwrap_or_default())
}

/// A response with a body that is JSON already (a type that writes itself, like
/// `EmbeddingResponse::to_json`).
pub fn json_bytes_response(status: StatusCode, json: impl Into<Bytes>) -> Response<ResponseBody> {
    let mut response = Response::new(full(json));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// Set on a response by handlers that called an upstream, so that the metrics can tell the
/// gateway's own time from the upstream's.
#[derive(Debug, Clone, Copy)]
pub struct UpstreamTime(pub std::time::Duration);

/// A `text/event-stream` response over a streamed body, noting the upstream's time to its first
/// frame for the metrics.
pub fn sse_response(
    body: ResponseBody,
    first_frame: std::time::Duration,
) -> Response<ResponseBody> {
    use http::HeaderValue;
    use http::header::{CACHE_CONTROL, CONTENT_TYPE};
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response.extensions_mut().insert(UpstreamTime(first_frame));
    response
}

impl ApiError {
    /// The response in `shape` (a family's, or its array form).
    pub fn into_response(self, shape: impl Into<Shape>) -> Response<ResponseBody> {
        let Shape { family, array } = shape.into();
        let body = self.body(family);
        let body = if array { json!([body]) } else { body };
        let status = self.shown_status(family);
        let mut response = json_response(status, &body);
        // Logs and metrics count the error as what it is, whatever status the family shows.
        response
            .extensions_mut()
            .insert(ErrorStatus(self.kind.status()));
        if let Some(seconds) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        if self.kind == ErrorKind::InsufficientBalance {
            // A quota (the balance, a spend cap) does not come back by retrying in a few
            // seconds: the OpenAI SDKs read this and do not retry the 429.
            response
                .headers_mut()
                .insert("x-should-retry", HeaderValue::from_static("false"));
        }
        if self.kind == ErrorKind::RequestTimeout {
            // The rest of the body is never read: the connection cannot carry another request.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}
