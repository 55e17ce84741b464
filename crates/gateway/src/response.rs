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
pub fn json_bytes_response(status: StatusCode, json: Vec<u8>) -> Response<ResponseBody> {
    let mut response = Response::new(full(json));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}
