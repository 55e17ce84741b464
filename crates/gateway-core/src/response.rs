//! Response bodies and the plain responses built from them — below both `body` (reading
//! requests) and `errors` (rendering refusals), which need them.

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};

/// Every response body: buffered or streamed bytes.
pub type ResponseBody = BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

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
