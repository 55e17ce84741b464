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

pub use crate::response::{
    BodySender, ResponseBody, channel_body, full, json_bytes_response, json_response,
};

/// How a request body must arrive (`[server]`; `docs/decisions.md`, "Connection hygiene").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// The longest pause between two pieces.
    pub pause: Duration,
    /// The least average rate over each [`Pace::window`], in bytes a second; 0: none.
    pub min_rate: u64,
    /// The window the rate is averaged over.
    pub window: Duration,
    /// The most the whole body may take.
    pub deadline: Duration,
}

impl Pace {
    /// Only a pause bound (what tests and the fuzz targets use).
    pub fn pause(pause: Duration) -> Pace {
        Pace {
            pause,
            min_rate: 0,
            window: pause,
            deadline: Duration::from_secs(24 * 3600),
        }
    }
}

pin_project_lite::pin_project! {
    /// A request body that must keep its [`Pace`]: it fails with [`TooSlow`] when the client
    /// pauses longer than `pace.pause` between two pieces, sends less than `pace.min_rate`
    /// bytes a second on average over a window, or has not finished within `pace.deadline` —
    /// so that a body declared and never sent, or sent a byte at a time, ends in 408, not in a
    /// connection (and an upload slot) held open for days.
    pub struct Paced<B> {
        #[pin]
        inner: B,
        #[pin]
        pause_ends: tokio::time::Sleep,
        #[pin]
        window_ends: tokio::time::Sleep,
        #[pin]
        deadline: tokio::time::Sleep,
        in_window: u64,
        pace: Pace,
    }
}

impl<B> Paced<B> {
    /// Wraps `inner`; the clocks start now.
    pub fn new(inner: B, pace: Pace) -> Paced<B> {
        Paced {
            inner,
            pause_ends: tokio::time::sleep(pace.pause),
            window_ends: tokio::time::sleep(pace.window),
            deadline: tokio::time::sleep(pace.deadline),
            in_window: 0,
            pace,
        }
    }
}

/// A client that sent its request body too slowly.
#[derive(Debug, thiserror::Error)]
pub enum TooSlow {
    /// It paused longer than the limit.
    #[error("the client sent nothing of its request body for {} s", .0.as_secs())]
    Paused(Duration),
    /// It sent less than the least rate over a window.
    #[error(
        "the client sent {sent} bytes of its request body in {} s, less than the {min_rate} bytes a second required",
        .window.as_secs()
    )]
    BelowRate {
        /// What arrived in the window.
        sent: u64,
        /// The window.
        window: Duration,
        /// The least rate, bytes a second.
        min_rate: u64,
    },
    /// It was not done within the deadline.
    #[error("the client's request body took longer than {} s", .0.as_secs())]
    Deadline(Duration),
}

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
                if let Some(data) = frame.data_ref() {
                    *this.in_window = this.in_window.saturating_add(data.len() as u64);
                }
                let next = tokio::time::Instant::now() + this.pace.pause;
                this.pause_ends.as_mut().reset(next);
                return Poll::Ready(Some(Ok(frame)));
            }
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
        }
        let pace = *this.pace;
        if this.deadline.poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Box::new(TooSlow::Deadline(pace.deadline)))));
        }
        if this.pause_ends.poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Box::new(TooSlow::Paused(pace.pause)))));
        }
        if pace.min_rate > 0 && this.window_ends.as_mut().poll(cx).is_ready() {
            let needed = pace.min_rate.saturating_mul(pace.window.as_secs().max(1));
            if *this.in_window < needed {
                return Poll::Ready(Some(Err(Box::new(TooSlow::BelowRate {
                    sent: *this.in_window,
                    window: pace.window,
                    min_rate: pace.min_rate,
                }))));
            }
            *this.in_window = 0;
            let next = tokio::time::Instant::now() + pace.window;
            this.window_ends.as_mut().reset(next);
            // Registers the waker for the new window.
            let _ = this.window_ends.poll(cx);
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The answer to a body that could not be read because of its client, not its content: 408
/// when it arrived too slowly ([`TooSlow`]; the connection is not reused, the rest of the body
/// is never read), 499 when the client went away mid-body ([`client_gone`]). `None` for any
/// other failure, which the caller words for its format.
pub fn read_failure(e: &(dyn std::error::Error + Send + Sync + 'static)) -> Option<ApiError> {
    if let Some(slow) = e.downcast_ref::<TooSlow>() {
        return Some(
            ApiError::new(
                ErrorKind::RequestTimeout,
                format!("The request body arrived too slowly: {slow}"),
            )
            .code("request_timeout"),
        );
    }
    client_gone(e).then(|| {
        ApiError::new(
            ErrorKind::ClientGone,
            "The client closed the connection before its request body was complete",
        )
        .code("client_closed_request")
    })
}

/// Whether a body's error says the client went away mid-body (its connection closed or reset
/// before the body was complete): such a request is logged 499, never blamed on its body.
fn client_gone(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(e) = source {
        if let Some(h) = e.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_canceled() || h.is_closed())
        {
            return true;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            )
        {
            return true;
        }
        source = e.source();
    }
    false
}

/// What a request body must keep to: its size, and how it must arrive (`State::body_bounds`
/// for an endpoint).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// The most bytes it may have.
    pub limit: usize,
    /// How it must arrive.
    pub pace: Pace,
}

/// Reads a whole request body of at most `limit` bytes, at `pace`. A declared `Content-Length`
/// over the limit is refused before anything is read.
pub async fn read_limited<B>(
    headers: &HeaderMap,
    body: B,
    Bounds { limit, pace }: Bounds,
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
    match Limited::new(Paced::new(body, pace), limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) => Err(read_failure(&*e).unwrap_or_else(|| {
            ApiError::invalid(
                "body",
                "unreadable_body",
                format!("The request body could not be read: {e}"),
            )
        })),
    }
}

/// DESIGN §2 step 3 for a JSON endpoint: the content type checked, the body read under the
/// endpoint's limit, and decoded into `T` with errors that name the field.
pub async fn read_json<T, B>(
    bounds: Bounds,
    headers: &HeaderMap,
    body: B,
) -> Result<(T, usize), ApiError>
where
    T: DeserializeOwned,
    B: http_body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    require_json(headers)?;
    let bytes = read_limited(headers, body, bounds).await?;
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

/// A page or script embedded in the binary (the console's, the portal's), with the headers
/// that keep it to itself: scripts only from the gateway (`script-src 'self'`, no inline
/// script), styles inline, no other site may frame it, no sniffing, no referrer.
pub fn embedded_asset(
    content: &'static str,
    content_type: &'static str,
) -> http::Response<ResponseBody> {
    let mut response = http::Response::new(full(content));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
             img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
             frame-ancestors 'none'",
        ),
    );
    headers.insert(
        "x-content-type-options",
        header::HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("no-referrer"),
    );
    response
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

    /// Issue 22 item 6, as it was found: one byte every 29 s never trips the 30 s pause bound,
    /// and kept a 50 MB upload open for days. The least rate (1 KiB/s over 30 s) cuts it at the
    /// first window; a steady body is cut at the deadline. On a paused clock: exact, instant.
    #[tokio::test(start_paused = true)]
    async fn a_trickle_is_cut_at_the_least_rate_and_a_long_body_at_the_deadline() {
        let pace = Pace {
            pause: Duration::from_secs(30),
            min_rate: 1024,
            window: Duration::from_secs(30),
            deadline: Duration::from_secs(600),
        };
        let sent = |every: Duration, bytes: usize| {
            let (tx, rx) =
                tokio::sync::mpsc::channel::<Result<http_body::Frame<Bytes>, std::io::Error>>(1);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    let frame = http_body::Frame::data(Bytes::from(vec![b'x'; bytes]));
                    if tx.send(Ok(frame)).await.is_err() {
                        return;
                    }
                }
            });
            http_body_util::StreamBody::new(futures_util::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|item| (item, rx))
            }))
        };
        let started = tokio::time::Instant::now();
        let bounds = Bounds {
            limit: 1 << 30,
            pace,
        };
        let e = read_limited(&HeaderMap::new(), sent(Duration::from_secs(29), 1), bounds)
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::RequestTimeout, "{}", e.message);
        assert!(
            e.message.contains("less than the 1024 bytes a second"),
            "{}",
            e.message
        );
        assert_eq!(started.elapsed(), Duration::from_secs(30));

        let started = tokio::time::Instant::now();
        let e = read_limited(
            &HeaderMap::new(),
            sent(Duration::from_secs(1), 4096),
            bounds,
        )
        .await
        .unwrap_err();
        assert!(e.message.contains("longer than 600 s"), "{}", e.message);
        assert_eq!(started.elapsed(), Duration::from_secs(600));
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
