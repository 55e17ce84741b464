//! Request and response bodies: reading under a limit (DESIGN §2 step 3) and decoding JSON
//! with errors that name the field.

use crate::errors::{ApiError, ErrorKind};
use bytes::Bytes;
use http::{HeaderMap, header};
use http_body_util::{BodyExt, Limited};
use serde::de::DeserializeOwned;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

pub use crate::response::{ResponseBody, full, json_bytes_response, json_response};

pin_project_lite::pin_project! {
    /// A request body that fails with [`BodyStalled`] when the client pauses longer than
    /// `pause` between two pieces (`[server] body_pause_timeout_seconds`): a body declared
    /// and never sent ends in 408, not in a connection held open for ever.
    pub struct Paced<B> {
        #[pin]
        inner: B,
        #[pin]
        deadline: tokio::time::Sleep,
        pause: Duration,
    }
}

impl<B> Paced<B> {
    /// Wraps `inner`; the first piece is due within `pause` from now.
    pub fn new(inner: B, pause: Duration) -> Paced<B> {
        Paced {
            inner,
            deadline: tokio::time::sleep(pause),
            pause,
        }
    }
}

/// A client paused inside its request body for longer than the configured limit.
#[derive(Debug, thiserror::Error)]
#[error("the client sent nothing of its request body for {} s", .0.as_secs())]
pub struct BodyStalled(pub Duration);

impl<B> http_body::Body for Paced<B>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let mut this = self.project();
        match this.inner.poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let next = tokio::time::Instant::now() + *this.pause;
                this.deadline.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match this.deadline.poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyStalled(*this.pause))))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The answer to a body that ended in [`BodyStalled`] (callers check with `is`): 408, and the
/// connection is not reused (the rest of the body is never read).
pub fn body_stalled(stalled: &(dyn std::error::Error + Send + Sync)) -> ApiError {
    ApiError::new(
        ErrorKind::RequestTimeout,
        format!("The request body stopped arriving: {stalled}"),
    )
    .code("request_timeout")
}

/// Reads a whole request body of at most `limit` bytes, with at most `pause` between two of
/// its pieces. A declared `Content-Length` over the limit is refused before anything is read.
pub async fn read_limited<B>(
    headers: &HeaderMap,
    body: B,
    limit: usize,
    pause: Duration,
) -> Result<Bytes, ApiError>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let too_large = || {
        ApiError::new(
            ErrorKind::PayloadTooLarge,
            format!("The request body is larger than this endpoint's limit of {limit} bytes"),
        )
        .code("request_too_large")
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    match Limited::new(Paced::new(body, pause), limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) if e.is::<BodyStalled>() => Err(body_stalled(&*e)),
        Err(e) => Err(ApiError::invalid(
            "body",
            "unreadable_body",
            format!("The request body could not be read: {e}"),
        )),
    }
}

/// DESIGN §2 step 3 for a JSON endpoint: the content type checked, the body read under the
/// endpoint's limit, and decoded into `T` with errors that name the field.
pub async fn read_json<T, B>(
    state: &crate::state::State,
    endpoint: crate::limits::Endpoint,
    headers: &HeaderMap,
    body: B,
) -> Result<(T, usize), ApiError>
where
    T: DeserializeOwned,
    B: http_body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    require_json(headers)?;
    let bytes = read_limited(
        headers,
        body,
        state.limits.of(endpoint),
        state.server.body_pause(),
    )
    .await?;
    Ok((decode_json(&bytes)?, bytes.len()))
}

/// Refuses a `Content-Type` that is present and not JSON. A missing one, and curl's default
/// `application/x-www-form-urlencoded` (what `curl -d` sends without `-H`), are tolerated: the
/// body must still parse as JSON.
pub fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let is_json = value
        .to_str()
        .ok()
        .and_then(|v| v.parse::<mime::Mime>().ok())
        .is_some_and(|m| {
            m.subtype() == mime::JSON
                || m.suffix() == Some(mime::JSON)
                || m.essence_str() == "application/x-www-form-urlencoded"
        });
    if is_json {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorKind::UnsupportedMediaType,
            "The request body must be JSON (Content-Type: application/json)",
        ))
    }
}

/// Decodes JSON into `T`; the error names the field that failed and why.
pub fn decode_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // Every JSON endpoint takes an object. serde would read a top-level array as a struct's
    // fields in order ("Invalid '[0]': expected a string"); say what is wrong instead.
    if let Some(&first) = bytes.iter().find(|b| !b.is_ascii_whitespace())
        && first != b'{'
        && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
    {
        let what = match first {
            b'[' => "an array",
            b'"' => "a string",
            b't' | b'f' => "a boolean",
            b'n' => "null",
            _ => "a number",
        };
        return Err(ApiError::invalid(
            "body",
            "invalid_type",
            format!("The request body must be a JSON object, not {what}"),
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(value) => Ok(value),
        Err(e) => {
            let inner = e.inner();
            if inner.is_syntax() || inner.is_eof() {
                return Err(ApiError::invalid(
                    "body",
                    "invalid_json",
                    format!("The request body is not valid JSON: {inner}"),
                ));
            }
            let message = inner.to_string();
            // A missing field is reported at its parent; name the field itself.
            let field = match (
                message.strip_prefix("missing field `"),
                e.path().to_string(),
            ) {
                (Some(rest), parent) => {
                    let name = rest.split('`').next().unwrap_or_default();
                    if parent == "." {
                        name.to_owned()
                    } else {
                        format!("{parent}.{name}")
                    }
                }
                (None, path) => path,
            };
            let message = strip_position(&message);
            Err(ApiError::invalid(
                field.clone(),
                "invalid_value",
                format!("Invalid '{field}': {message}"),
            ))
        }
    }
}

/// serde_json appends " at line L column C", which says nothing to an API user.
fn strip_position(message: &str) -> &str {
    match message.rfind(" at line ") {
        Some(i) => &message[..i],
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct T {
        model: String,
        n: Option<u32>,
    }

    #[test]
    fn decode_errors_name_the_field() {
        let e = decode_json::<T>(br#"{"n": 1}"#).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("model"));
        assert!(e.message.contains("missing field `model`"), "{}", e.message);
        let e = decode_json::<T>(br#"{"model": "m", "n": -1}"#).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("n"));
        let e = decode_json::<T>(br#"{"model": "#).unwrap_err();
        assert_eq!(e.code.as_deref(), Some("invalid_json"));
    }

    #[test]
    fn content_types() {
        let mut h = HeaderMap::new();
        assert!(require_json(&h).is_ok());
        h.insert(
            header::CONTENT_TYPE,
            "application/json; charset=utf-8".parse().unwrap(),
        );
        assert!(require_json(&h).is_ok());
        h.insert(header::CONTENT_TYPE, "text/plain".parse().unwrap());
        assert!(require_json(&h).is_err());
    }
}
