//! The shared HTTP client.

use crate::common::error::{Phase, UpstreamError};
use bytes::{Bytes, BytesMut};
use http::{Request, Response};
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The body type of upstream requests: anything that yields bytes (a buffer, or a spooled upload).
pub type Body = UnsyncBoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// Time limits of one upstream call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Opening the TCP (and TLS) connection.
    pub connect: Duration,
    /// From sending the request to receiving the response head.
    pub first_byte: Duration,
    /// Longest silence between two pieces of a response body.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(60),
            idle: Duration::from_secs(60),
        }
    }
}

/// How the shared client is built.
#[derive(Debug, Clone, Default)]
pub struct ClientConfig {
    /// Connect timeout used for every connection (the other limits are per call).
    pub connect_timeout: Option<Duration>,
    /// Extra PEM root certificates to trust beside the Mozilla roots (private CAs, tests).
    pub extra_roots: Vec<PathBuf>,
    /// How long an idle pooled connection is kept.
    pub pool_idle_timeout: Option<Duration>,
    /// For a client that fetches URLs clients gave: the addresses it may connect to, checked on
    /// the resolved addresses it connects to (`crate::common::resolve`). `None` for channels.
    pub address_guard: Option<crate::common::resolve::AddressGuard>,
    /// HTTP/1.1 only: a WebSocket upgrade (live sessions) is HTTP/1.1's, and a TLS server
    /// offered `h2` by ALPN would pick it and refuse the upgrade.
    pub http1_only: bool,
}

/// A configured upstream address and its credential.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// e.g. `https://api.openai.com` — paths such as `/v1/embeddings` are appended.
    pub base_url: String,
    /// The channel's secret, sent the way the format wants it.
    pub api_key: Option<String>,
    /// Limits of each call to this endpoint.
    pub timeouts: Timeouts,
    /// The W3C `traceparent` of the call's span, sent on when traces are exported.
    pub traceparent: Option<String>,
}

impl Endpoint {
    /// The full URL of `path` (which starts with `/`) on this endpoint.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url.trim_end_matches('/'), path)
    }
}

/// One pooled HTTP/1.1 + HTTP/2 client with rustls, shared by every channel.
#[derive(Clone, Debug)]
pub struct HttpClient {
    inner: Client<HttpsConnector<HttpConnector<crate::common::resolve::Resolver>>, Body>,
}

impl HttpClient {
    /// Builds the client. Fails only on an unreadable extra root certificate.
    pub fn new(config: &ClientConfig) -> Result<HttpClient, UpstreamError> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for path in &config.extra_roots {
            use rustls::pki_types::CertificateDer;
            use rustls::pki_types::pem::PemObject;
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| UpstreamError::Config(format!("{}: {e}", path.display())))?;
            for cert in certs {
                let cert =
                    cert.map_err(|e| UpstreamError::Config(format!("{}: {e}", path.display())))?;
                roots
                    .add(cert)
                    .map_err(|e| UpstreamError::Config(format!("{}: {e}", path.display())))?;
            }
        }
        // An explicit provider, so that a second provider elsewhere in the dependency graph can
        // never make rustls panic at run time over which one to use.
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| UpstreamError::Config(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let mut http = HttpConnector::new_with_resolver(crate::common::resolve::Resolver::new(
            config.address_guard.clone(),
        ));
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(
            config
                .connect_timeout
                .unwrap_or(Timeouts::default().connect),
        ));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1();
        let https = if config.http1_only {
            https.wrap_connector(http)
        } else {
            https.enable_http2().wrap_connector(http)
        };
        let inner = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(config.pool_idle_timeout.unwrap_or(Duration::from_secs(90)))
            .http1_max_buf_size(READ_BUFFER_MAX)
            .build(https);
        Ok(HttpClient { inner })
    }

    /// Sends a request and waits for the response head, at most `timeouts.first_byte`.
    pub async fn send(
        &self,
        request: Request<Body>,
        timeouts: &Timeouts,
    ) -> Result<Response<Incoming>, UpstreamError> {
        match tokio::time::timeout(timeouts.first_byte, self.inner.request(request)).await {
            Err(_) => Err(UpstreamError::Timeout {
                phase: Phase::FirstByte,
                after: timeouts.first_byte,
            }),
            Ok(Err(e)) if e.is_connect() => Err(UpstreamError::Connect(error_chain(&e))),
            Ok(Err(e)) => Err(UpstreamError::Transport(error_chain(&e))),
            Ok(Ok(response)) => Ok(response),
        }
    }

    /// Reads a whole response body, at most `limit` bytes, with `timeouts.idle` between pieces.
    /// A body that arrives in one piece (an embeddings answer, as a rule) is kept as hyper read
    /// it; only a second piece makes a buffer both are copied into (an 8 KB answer copied
    /// cost 10,000 instructions a request, `docs/benchmarks.md`, "Instructions per request").
    pub async fn read_body(
        body: Incoming,
        limit: usize,
        timeouts: &Timeouts,
    ) -> Result<Bytes, UpstreamError> {
        let mut body = body;
        let mut buf = Pieces::default();
        loop {
            let frame = match tokio::time::timeout(timeouts.idle, body.frame()).await {
                Err(_) => {
                    return Err(UpstreamError::Timeout {
                        phase: Phase::Idle,
                        after: timeouts.idle,
                    });
                }
                Ok(None) => return Ok(buf.into_bytes()),
                Ok(Some(Err(e))) => return Err(UpstreamError::Transport(error_chain(&e))),
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = frame.into_data() {
                if buf.len() + data.len() > limit {
                    return Err(UpstreamError::Protocol(format!(
                        "response body larger than {limit} bytes"
                    )));
                }
                buf.push(data);
            }
        }
    }
}

/// A body read so far: one piece kept as it came, or the pieces joined.
enum Pieces {
    One(Bytes),
    Joined(BytesMut),
}

impl Default for Pieces {
    fn default() -> Self {
        Pieces::One(Bytes::new())
    }
}

impl Pieces {
    fn len(&self) -> usize {
        match self {
            Pieces::One(bytes) => bytes.len(),
            Pieces::Joined(buf) => buf.len(),
        }
    }

    fn push(&mut self, data: Bytes) {
        if data.is_empty() {
            return;
        }
        match self {
            Pieces::One(first) if first.is_empty() => *first = data,
            Pieces::One(first) => {
                let mut joined = BytesMut::with_capacity(first.len() + data.len());
                joined.extend_from_slice(first);
                joined.extend_from_slice(&data);
                *self = Pieces::Joined(joined);
            }
            Pieces::Joined(buf) => buf.extend_from_slice(&data),
        }
    }

    fn into_bytes(self) -> Bytes {
        match self {
            Pieces::One(bytes) => bytes,
            Pieces::Joined(buf) => buf.freeze(),
        }
    }
}

/// A response body as a stream of byte chunks, each awaited at most `idle`.
pub fn body_stream(
    body: Incoming,
    idle: Duration,
) -> impl futures_util::Stream<Item = Result<Bytes, UpstreamError>> + Send + 'static {
    futures_util::stream::unfold(Some(body), move |body| async move {
        let mut body = body?;
        loop {
            match tokio::time::timeout(idle, body.frame()).await {
                Err(_) => {
                    let e = UpstreamError::Timeout {
                        phase: Phase::Idle,
                        after: idle,
                    };
                    return Some((Err(e), None));
                }
                Ok(None) => return None,
                Ok(Some(Err(e))) => {
                    return Some((Err(UpstreamError::Transport(error_chain(&e))), None));
                }
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        return Some((Ok(data), Some(body)));
                    }
                    // Trailers carry nothing we use; keep reading.
                }
            }
        }
    })
}

/// The most an upstream connection reads at once, and so the most its read buffer holds for
/// as long as the connection lives: hyper's own default grows to about 400 KB, and keeps what
/// it grew to — a t2a stream's 76 KB frames left every open stream 128 KB or more while it
/// waited for the next (docs/benchmarks.md, "Lean streams"). An answer's head must fit.
const READ_BUFFER_MAX: usize = 32 << 10;

/// A response body read as server-sent events under `limits` (each awaited at most `idle`): an
/// event or a stream past its bound ends with a protocol error as its last item, so the relay
/// settles it as a cut stream instead of buffering without end.
pub(crate) fn sse_events(
    body: Incoming,
    idle: Duration,
    limits: tollgate_sse::Limits,
) -> impl futures_util::Stream<Item = Result<tollgate_sse::Event, UpstreamError>> + Send + 'static {
    let events = tollgate_sse::EventStream::new(body_stream(body, idle)).with_limits(limits);
    futures_util::stream::unfold(Some(Box::pin(events)), |events| async move {
        use futures_util::StreamExt;
        let mut events = events?;
        match events.next().await {
            Some(item) => Some((item, Some(events))),
            None => events.exceeded().map(|bound| {
                let e = UpstreamError::Protocol(format!("the upstream sent {bound}"));
                (Err(e), None)
            }),
        }
    })
}

/// Whether `response` is server-sent events (`Content-Type: text/event-stream`).
pub(crate) fn is_event_stream(response: &Response<Incoming>) -> bool {
    response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// A stream of vendor frames that ends after its first error: nothing a vendor sends after an
/// error is trustworthy, and the error is the stream's last item.
pub(crate) fn until_first_error<T, S>(
    frames: S,
) -> impl futures_util::Stream<Item = Result<T, UpstreamError>> + Send
where
    S: futures_util::Stream<Item = Result<T, UpstreamError>> + Send,
    T: Send,
{
    use futures_util::StreamExt;
    frames.scan(false, |failed, item| {
        let out = if *failed {
            None
        } else {
            *failed = item.is_err();
            Some(item)
        };
        futures_util::future::ready(out)
    })
}

/// A request to `path` on `endpoint`, carrying the endpoint's key as `Authorization: Bearer`
/// (the channel formats that use it: all but `genai`).
pub(crate) fn bearer_request(
    endpoint: &Endpoint,
    method: http::Method,
    path: &str,
) -> http::request::Builder {
    let builder = traced(
        Request::builder().method(method).uri(endpoint.url(path)),
        endpoint,
    );
    match &endpoint.api_key {
        Some(key) => builder.header(http::header::AUTHORIZATION, format!("Bearer {key}")),
        None => builder,
    }
}

/// `builder` with the endpoint's `traceparent`, when the call has one.
pub(crate) fn traced(
    builder: http::request::Builder,
    endpoint: &Endpoint,
) -> http::request::Builder {
    match &endpoint.traceparent {
        Some(traceparent) => builder.header("traceparent", traceparent.as_str()),
        None => builder,
    }
}

/// A `POST` of the JSON `body` to `path` with the endpoint's Bearer key.
pub(crate) fn json_post(
    endpoint: &Endpoint,
    path: &str,
    body: Vec<u8>,
) -> Result<Request<Body>, UpstreamError> {
    bearer_request(endpoint, http::Method::POST, path)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(full_body(body))
        .map_err(|e| UpstreamError::Config(e.to_string()))
}

/// A buffered request body.
pub fn full_body(bytes: impl Into<Bytes>) -> Body {
    http_body_util::Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// An error with its sources, for messages that say what actually went wrong.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_in_one_piece_is_kept_and_pieces_are_joined_in_order() {
        let mut one = Pieces::default();
        let piece = Bytes::from_static(b"the whole answer");
        one.push(piece.clone());
        one.push(Bytes::new());
        let kept = one.into_bytes();
        assert_eq!(kept, piece);
        assert_eq!(kept.as_ptr(), piece.as_ptr(), "not copied");

        let mut many = Pieces::default();
        for piece in ["a", "", "bc", "def"] {
            many.push(Bytes::from_static(piece.as_bytes()));
        }
        assert_eq!(many.len(), 6);
        assert_eq!(many.into_bytes(), Bytes::from_static(b"abcdef"));
        assert_eq!(Pieces::default().into_bytes(), Bytes::new());
    }
}
