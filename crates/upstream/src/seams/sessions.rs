//! The live-session seam: what the gateway asks of a channel that holds a voice session open
//! (docs/decisions.md, "Live voice sessions"). One adapter per format implements
//! [`SessionDialer`]: `openai-realtime`
//! ([`crate::adapters::openai_realtime::OpenAiRealtime`]) and `gemini-live`
//! ([`crate::adapters::gemini_live::GeminiLive`]).

use crate::common::websocket::ChannelSocket;
use crate::{Endpoint, HttpClient, UpstreamError};
use futures_util::future::BoxFuture;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The live-session seam: opens the channel's socket for `model`. The events on it are the
/// format's own and relayed as they are; the gateway reads them with the format's protocol
/// crate (`tollgate-realtime`).
pub trait SessionDialer: Send + Sync {
    /// Opens a session of `model` (the channel's name for it) on `endpoint`.
    fn dial<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        model: &'a str,
        config: WebSocketConfig,
    ) -> BoxFuture<'a, Result<ChannelSocket, UpstreamError>>;
}
