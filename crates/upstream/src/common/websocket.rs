//! Opening a WebSocket to a channel (RFC 6455 §4.1) on the shared client: the upgrade is a
//! hyper request like any other call, so the channel's connector, resolver and TLS are the
//! ones every call uses; only the framing after it is `tokio-tungstenite`'s.

use crate::common::error::{Phase, UpstreamError};
use crate::{HttpClient, Timeouts};
use http::{HeaderValue, Request, StatusCode, header};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

/// A channel's socket, framed.
pub type ChannelSocket = WebSocketStream<TokioIo<Upgraded>>;

/// Where a channel's socket is and how it is entered: the URL, and the credential header.
#[derive(Debug)]
pub struct Dial {
    /// The socket's URL on the channel's base.
    pub url: String,
    /// The header the key goes in, and its value (`None`: a channel without a key).
    pub credential: Option<(header::HeaderName, String)>,
    /// How the channel's refusal reads (its vendor's error shape).
    pub read_error: fn(&[u8]) -> Option<String>,
}

/// Sends a `GET` of `to.url` with its credential as a WebSocket upgrade and frames the
/// upgraded connection with `config`. A channel that answers anything but `101` with the
/// right accept key did not open a session: its status is the call's error, as any call's.
pub async fn dial(
    client: &HttpClient,
    to: Dial,
    timeouts: &Timeouts,
    config: WebSocketConfig,
) -> Result<ChannelSocket, UpstreamError> {
    let mut request = Request::builder().method(http::Method::GET).uri(to.url);
    if let Some((name, value)) = to.credential {
        request = request.header(name, value);
    }
    let mut request = request
        .body(crate::full_body(bytes::Bytes::new()))
        .map_err(|e| UpstreamError::Config(e.to_string()))?;
    let read_error = to.read_error;
    let key = generate_key();
    let headers = request.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(
        header::SEC_WEBSOCKET_VERSION,
        HeaderValue::from_static("13"),
    );
    headers.insert(
        header::SEC_WEBSOCKET_KEY,
        HeaderValue::from_str(&key).map_err(|e| UpstreamError::Config(e.to_string()))?,
    );
    let response = client.send(request, timeouts).await?;
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        let status = response.status().as_u16();
        let body = HttpClient::read_body(response.into_body(), 4096, timeouts)
            .await
            .unwrap_or_default();
        return Err(UpstreamError::refused(status, &body, read_error, None));
    }
    let accepted = response
        .headers()
        .get(header::SEC_WEBSOCKET_ACCEPT)
        .is_some_and(|v| v.as_bytes() == derive_accept_key(key.as_bytes()).as_bytes());
    if !accepted {
        return Err(UpstreamError::Protocol(
            "the channel's WebSocket answer had no valid Sec-WebSocket-Accept".into(),
        ));
    }
    let upgraded = tokio::time::timeout(timeouts.first_byte, hyper::upgrade::on(response))
        .await
        .map_err(|_| UpstreamError::Timeout {
            phase: Phase::FirstByte,
            after: timeouts.first_byte,
        })?
        .map_err(|e| UpstreamError::Transport(e.to_string()))?;
    Ok(WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Client, Some(config)).await)
}
